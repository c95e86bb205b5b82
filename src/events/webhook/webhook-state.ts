/**
 * One subscription's webhook state, kept across the attempts of its loop (design notes §4.4): a
 * retry must not mint a new URL or a new secret, or the server would sign with one the receiver
 * never learns.
 *
 * Secret generations (wire notes §17):
 * - `confirmed`: the secret the server last confirmed (a subscribe answer that came back), or, for
 *   a pair never confirmed yet, the one sent first. It is what the snapshot keeps.
 * - `pending`: a new secret sent by a refresh the server has not answered yet. It verifies
 *   deliveries at once (the server may switch before its answer arrives) and is re-sent unchanged
 *   until an answer confirms it, so a failed refresh never leaves the server signing with a secret
 *   we have forgotten.
 * - `previous`: the confirmed secret before the current one; exactly one generation back. While a
 *   rotation is pending it no longer verifies: the pending one is then the generation beside the
 *   confirmed one (wire notes §17: current and one previous, never two back).
 *
 * Pure data and rules; the loop (webhook-loop.ts) does the I/O around them.
 */
import type { WebhookRecord } from "./types.ts";

/** What the last stored subscribe answer said (the route and the status read it). */
export interface WebhookGrant {
  id: string;
  refreshBefore: string | null;
  deliveryStatus: unknown;
}

export class WebhookState {
  token: string | null;
  confirmed: string | null;
  previous: string | null;
  pending: string | null = null;
  /** Successful refreshes (subscribe answers after the first) in this process. */
  refreshes = 0;
  /** The last stored grant in this process; the persisted id and expiry until one arrives. */
  grant: WebhookGrant | null = null;
  private persistedId: string | null;
  private persistedRefreshBefore: string | null;

  constructor(record: WebhookRecord | null | undefined) {
    this.token = record?.token ?? null;
    this.confirmed = record?.secret ?? null;
    this.previous = record?.previous ?? null;
    this.pending = record?.pending ?? null;
    this.persistedId = record?.subscription_id ?? null;
    this.persistedRefreshBefore = record?.refresh_before ?? null;
  }

  /** Whether a token and a secret exist (persisted, or minted earlier in this process). */
  get hasPair(): boolean {
    return this.token !== null && this.confirmed !== null;
  }

  /** A fresh pair: nothing of the old one verifies any more. */
  adoptPair(token: string, secret: string): void {
    this.token = token;
    this.confirmed = secret;
    this.previous = null;
    this.pending = null;
    this.grant = null;
    this.persistedId = null;
    this.persistedRefreshBefore = null;
  }

  /** Forgets the pair (the server ended the subscription: its URL stays dead, 410). */
  dropPair(): void {
    this.adoptPair("", "");
    this.token = null;
    this.confirmed = null;
  }

  /**
   * Secrets a delivery may verify with now: the confirmed one and exactly one generation beside it
   * — the pending new one while a rotation is unconfirmed (the server may have switched to it; the
   * confirmed one is then its previous), else the previous one. Never two generations back.
   */
  secrets(): string[] {
    const out: string[] = [];
    for (const s of [this.confirmed, this.pending ?? this.previous]) if (s !== null && !out.includes(s)) out.push(s);
    return out;
  }

  /** The secret the next subscribe sends: a pending one until it is confirmed, else the confirmed one. */
  secretToSend(): string {
    const secret = this.pending ?? this.confirmed;
    if (secret === null) throw new Error("webhook state has no secret (a pair is minted before the first subscribe)");
    return secret;
  }

  /** A refresh rotates: a new pending secret, unless one is pending already (then it is re-sent unchanged). True when one was minted. */
  beginRotation(mint: () => string): boolean {
    if (this.pending !== null) return false;
    this.pending = mint();
    return true;
  }

  /** The server answered a subscribe that carried `sent`: it is the confirmed secret now. */
  confirm(sent: string): void {
    if (sent !== this.confirmed) {
      this.previous = this.confirmed;
      this.confirmed = sent;
    }
    if (this.pending === sent) this.pending = null;
  }

  get subscriptionId(): string | null {
    return this.grant?.id ?? this.persistedId;
  }

  get refreshBefore(): string | null {
    return this.grant !== null ? this.grant.refreshBefore : this.persistedRefreshBefore;
  }

  /** The snapshot's `webhook` record (null: no pair yet). */
  record(): WebhookRecord | null {
    if (this.token === null || this.confirmed === null) return null;
    return {
      token: this.token,
      secret: this.confirmed,
      previous: this.previous,
      ...(this.pending !== null ? { pending: this.pending } : {}),
      subscription_id: this.subscriptionId,
      refresh_before: this.refreshBefore,
    };
  }
}
