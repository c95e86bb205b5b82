/** JSON-RPC lines vigil itself sends to the MCP client (wire errors use numeric codes). */
import type { JsonRpcId } from "./client-frames.ts";

export const SERVER_GONE = -32000;

export function errorLine(id: JsonRpcId, code: number, message: string): Uint8Array {
  return encodeLine({ jsonrpc: "2.0", id, error: { code, message } });
}

export function resultLine(id: JsonRpcId, result: unknown): Uint8Array {
  return encodeLine({ jsonrpc: "2.0", id, result });
}

export function encodeLine(message: unknown): Uint8Array {
  return Buffer.from(`${JSON.stringify(message)}\n`);
}
