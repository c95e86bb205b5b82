/**
 * `--listen` addresses: `HOST:PORT`, `[IPv6]:PORT`, or a bare `PORT` (then loopback, 127.0.0.1).
 * Port 0 asks the system for a free port (the readiness line prints the one bound). Anything else
 * is a usage error (exit 2) naming the flag.
 */
import { type VigilError, errnoCode, errorMessage, usageError } from "../../shared/errors.ts";

export interface ListenAddress {
  hostname: string;
  port: number;
}

export const DEFAULT_LISTEN_HOST = "127.0.0.1";

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;

/** `flag`: the flag named in refusals (`--listen`, `--metrics-listen`). */
export function parseListen(raw: string, flag = "--listen"): ListenAddress {
  const bad = (why: string) =>
    usageError(`${flag} ${JSON.stringify(raw.slice(0, 80))}: ${why}`, `use HOST:PORT, [IPv6]:PORT or PORT, e.g. ${flag} 127.0.0.1:8080`);
  let host: string;
  let portText: string;
  if (/^[0-9]+$/.test(raw)) {
    host = DEFAULT_LISTEN_HOST;
    portText = raw;
  } else if (raw.startsWith("[")) {
    const close = raw.indexOf("]");
    if (close === -1 || raw[close + 1] !== ":") throw bad("expected [IPv6]:PORT");
    host = raw.slice(1, close);
    portText = raw.slice(close + 2);
    if (!IPV6.test(host) || !host.includes(":")) throw bad("not an IPv6 address");
  } else {
    const colon = raw.lastIndexOf(":");
    if (colon === -1) throw bad("missing :PORT");
    host = raw.slice(0, colon);
    portText = raw.slice(colon + 1);
    if (host.includes(":")) throw bad("put an IPv6 address in brackets");
    if (!HOST_NAME.test(host)) throw bad("not a host name or IPv4 address");
  }
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) throw bad("the port must be an integer from 0 to 65535");
  return { hostname: host, port: Number(portText) };
}

/** `http://host:port` with IPv6 hosts bracketed. */
export function listenUrl(hostname: string, port: number): string {
  return `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
}

/** A listener that could not bind (`flag`: `--listen`, `--metrics-listen`): a usage error (exit 2), like a bad address. */
export function bindRefusal(flag: string, address: ListenAddress, e: unknown): VigilError {
  const why = errnoCode(e) === "EADDRINUSE" ? "address in use" : errorMessage(e);
  return usageError(`${flag} ${address.hostname}:${address.port}: cannot listen: ${why}`);
}

/**
 * Whether `hostname` names only this machine: `localhost`, 127.0.0.0/8 or ::1 (also written in
 * full, or as the IPv4-mapped ::ffff:127.x.y.z). By address text alone — nothing is resolved.
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === "localhost") return true;
  const v4 = /^(?:::ffff:)?127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  if (v4 !== null) return v4.slice(1).every((o) => Number(o) <= 255);
  return /^(?:0{0,4}:){2,7}0{0,3}1$/.test(h) && h.split(":").filter((p) => p !== "" && Number.parseInt(p, 16) !== 0).length === 1;
}
