/**
 * Reusable fixed-size byte blocks for holding a large line while it is read.
 *
 * A stream reader hands over every read as a fresh ArrayBuffer. Holding a multi-megabyte line as
 * those chunks keeps each one alive across the collections that its own allocation triggers, so
 * the engine promotes them and frees them only at a full collection: memory climbs by several
 * messages before it falls, and the collections cost more CPU than the bytes do. Copying each read
 * into blocks that are reused line after line lets the read's chunk die young (as in a plain byte
 * relay) and keeps the pages of the held line resident instead of faulting in new ones per message.
 *
 * Bounded: at most `maxFreeBytes` of free blocks are kept; blocks returned beyond that are dropped
 * for the collector. Blocks in use are bounded by the caller (the line cap).
 */

export const POOL_BLOCK_BYTES = 256 * 1024;
export const POOL_MAX_FREE_BYTES = 16 * 1024 * 1024;

export class BlockPool {
  private readonly free: Uint8Array[] = [];

  constructor(
    readonly blockBytes = POOL_BLOCK_BYTES,
    private readonly maxFreeBytes = POOL_MAX_FREE_BYTES,
  ) {}

  /** A block to fill: a free one when there is one, else a new one. */
  take(): Uint8Array {
    return this.free.pop() ?? new Uint8Array(this.blockBytes);
  }

  /** Returns blocks nobody reads any more. */
  give(blocks: readonly Uint8Array[]): void {
    for (const block of blocks) {
      if ((this.free.length + 1) * this.blockBytes > this.maxFreeBytes) return;
      this.free.push(block);
    }
  }

  /** Bytes held in free blocks (for tests and measurements). */
  get freeBytes(): number {
    return this.free.length * this.blockBytes;
  }
}
