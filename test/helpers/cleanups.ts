/** What a test started, ended after it: run in reverse order, and a failing cleanup does not stop the others. */
export class Cleanups {
  private readonly list: (() => Promise<void> | void)[] = [];

  add(fn: () => Promise<void> | void): void {
    this.list.push(fn);
  }

  async run(): Promise<void> {
    for (const c of this.list.splice(0).reverse()) {
      try {
        await c();
      } catch {
        // best effort: the next cleanup still runs
      }
    }
  }
}
