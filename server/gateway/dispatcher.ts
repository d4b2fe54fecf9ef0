// The node's dispatcher: claims for local sessions with free capacity. Woken in-process when a
// submit or a release commits on this node ('work' event); polls with an adaptive interval for
// work submitted through other nodes (MySQL has no NOTIFY): 10 ms after a productive round,
// doubling to 250 ms when idle.
import { claim } from '../dispatch/claim.js';
import { isConnectionError } from '../db/pool.js';
import { OrbitError } from '@orbit/protocol/errors';
import type { Gateway } from './ws-gateway.js';
import type { Session } from './session.js';
import { guarded } from '../boundary.js';

const MAX_BATCH = 64;
const MAX_PARALLEL = 4;
const MIN_POLL_MS = 10;
const MAX_POLL_MS = 250;

export class Dispatcher {
  private readonly due = new Set<Session>();
  private readonly busy = new Set<Session>();
  private running = 0;
  private stopped = false;
  private pollMs = MIN_POLL_MS;
  private pollTimer: NodeJS.Timeout | null = null;
  private productive = false;
  private idleWaiters: (() => void)[] = [];
  private readonly onWork = (queueId: string) => {
    for (const s of this.gw.sessions.values()) if (s.claim?.queueIds.includes(queueId)) this.due.add(s);
    this.pollMs = MIN_POLL_MS;
    this.pump();
  };

  constructor(private readonly gw: Gateway) {
    gw.app.events.on('work', this.onWork);
    this.schedulePoll();
  }

  kick(s: Session): void {
    if (this.stopped) return;
    this.due.add(s);
    this.pump();
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.pollTimer = setTimeout(() => {
      void guarded(this.gw.app, 'dispatcher-poll', () => {
        this.pollMs = this.productive ? MIN_POLL_MS : Math.min(MAX_POLL_MS, this.pollMs * 2);
        this.productive = false;
        for (const s of this.gw.sessions.values()) if (s.free > 0) this.due.add(s);
        this.pump();
      });
      this.schedulePoll();
    }, this.pollMs);
  }

  private pump(): void {
    while (!this.stopped && this.running < MAX_PARALLEL) {
      const next = [...this.due].find((s) => !this.busy.has(s));
      if (!next) break;
      this.due.delete(next);
      if (next.free <= 0) continue;
      this.running++;
      this.busy.add(next);
      void this.gw.track(this.claimFor(next)).finally(() => {
        this.running--;
        this.busy.delete(next);
        if (this.running === 0 && this.due.size === 0) for (const w of this.idleWaiters.splice(0)) w();
        this.pump();
      });
    }
  }

  private async claimFor(s: Session): Promise<void> {
    const n = Math.min(MAX_BATCH, s.free);
    if (n <= 0 || s.state !== 'open') return;
    const started = process.hrtime.bigint();
    try {
      const got = await claim(this.gw.app.pool, s.claim, n, s.log, () => this.gw.app.metrics.tokenExhausted.inc());
      this.gw.app.metrics.claimSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      if (got.length === 0) return;
      this.productive = true;
      this.gw.app.metrics.tasksAssigned.inc(got.length);
      s.deliver(got);
      // A full batch suggests more waiting work: claim again for this session.
      if (got.length === n && s.free > 0) this.due.add(s);
    } catch (err) {
      if (err instanceof OrbitError && err.code === 'UNAUTHENTICATED') s.revoked();
      else if (isConnectionError(err)) s.log.warn({ err }, 'claim failed: database unavailable');
      else s.log.error({ err }, 'claim failed');
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.gw.app.events.off('work', this.onWork);
  }

  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
