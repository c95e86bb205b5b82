/**
 * A loopback TCP client with a small kernel receive buffer (SO_RCVBUF set before connect, so the
 * window it advertises stays small), built on libc through bun:ffi: node:net and Bun.connect
 * cannot set a TCP socket's receive buffer. It reads only when told to, never blocks (poll with
 * timeout 0), and says when the peer ended the connection (EOF, reset or hang-up). Linux only.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

const AF_INET = 2;
const SOCK_STREAM = 1;
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;
const POLLIN = 0x1;
const POLLERR = 0x8;
const POLLHUP = 0x10;

const libc = dlopen("libc.so.6", {
  socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  connect: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  write: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  read: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
  close: { args: [FFIType.i32], returns: FFIType.i32 },
});

export class SmallWindowSocket {
  /** Bytes read so far. */
  bytes = 0;
  /** The peer ended the connection (EOF, reset or hang-up). */
  ended = false;
  private closed = false;
  private readonly chunk = new Uint8Array(64 * 1024);

  private constructor(
    private readonly fd: number,
    /** The receive buffer the kernel granted (Linux doubles the request, with a floor). */
    readonly receiveBufferBytes: number,
  ) {}

  /** Connects to 127.0.0.1:`port` with a receive buffer of `bufferBytes`, then sends `request`. */
  static open(port: number, bufferBytes: number, request: string): SmallWindowSocket {
    const fd = libc.symbols.socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw new Error("socket() failed");
    const size = new Int32Array([bufferBytes]);
    if (libc.symbols.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, ptr(size), 4) !== 0) throw new Error("setsockopt(SO_RCVBUF) failed");
    const granted = new Int32Array(1);
    const length = new Uint32Array([4]);
    libc.symbols.getsockopt(fd, SOL_SOCKET, SO_RCVBUF, ptr(granted), ptr(length));
    const address = new Uint8Array(16); // struct sockaddr_in
    const view = new DataView(address.buffer);
    view.setUint16(0, AF_INET, true);
    view.setUint16(2, port, false);
    address.set([127, 0, 0, 1], 4);
    if (libc.symbols.connect(fd, ptr(address), 16) !== 0) {
      libc.symbols.close(fd);
      throw new Error(`connect(127.0.0.1:${port}) failed`);
    }
    const socket = new SmallWindowSocket(fd, granted[0]!);
    const bytes = new TextEncoder().encode(request);
    // A request of a few hundred bytes fits the send buffer in one write.
    if (Number(libc.symbols.write(fd, ptr(bytes), bytes.length)) !== bytes.length) throw new Error("short write of the request");
    return socket;
  }

  /** Reads whatever has arrived, without blocking; notes the end of the connection. */
  readAvailable(): void {
    const fds = new Uint8Array(8); // struct pollfd { int fd; short events; short revents; }
    const view = new DataView(fds.buffer);
    for (let round = 0; round < 1024 && !this.ended && !this.closed; round++) {
      view.setInt32(0, this.fd, true);
      view.setInt16(4, POLLIN, true);
      view.setInt16(6, 0, true);
      if (libc.symbols.poll(ptr(fds), 1, 0) <= 0) return;
      const revents = view.getInt16(6, true);
      if ((revents & POLLIN) !== 0) {
        const n = Number(libc.symbols.read(this.fd, ptr(this.chunk), this.chunk.length));
        if (n > 0) {
          this.bytes += n;
          continue;
        }
        this.ended = true; // 0: EOF; -1 after POLLIN: a reset
        return;
      }
      if ((revents & (POLLERR | POLLHUP)) !== 0) this.ended = true;
      return;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    libc.symbols.close(this.fd);
  }
}
