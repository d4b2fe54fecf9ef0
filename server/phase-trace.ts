// TEMPORARY instrumentation (issue 19, unkeyed-paced p99): per-transaction timestamps, written as
// JSON lines to $ORBIT_PHASE_TRACE at exit. Inert (one boolean test) when the variable is unset.
import { appendFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.ORBIT_PHASE_TRACE && `${process.env.ORBIT_PHASE_TRACE}.${process.pid}`;
export const tracing = !!file;

export interface TxTrace {
  id: number;
  path: string;
  /** pool.getConnection asked, got, START sent, done (ms, performance.now()). */
  ask: number;
  got: number;
  end: number;
  ok: boolean;
  /** [sent, answered, statement heads] per round trip. */
  trips: [number, number, string][];
  tags: Record<string, unknown>;
}

const lines: string[] = [];
let nextId = 1;

export function txTrace(path: string, ask: number): TxTrace | undefined {
  if (!tracing) return undefined;
  return { id: nextId++, path, ask, got: performance.now(), end: 0, ok: false, trips: [], tags: {} };
}

export function txDone(t: TxTrace | undefined, ok: boolean): void {
  if (!t) return;
  t.end = performance.now();
  t.ok = ok;
  lines.push(JSON.stringify({ k: 'tx', ...t }));
}

export function heads(texts: string[]): string {
  return texts.map((s) => s.replace(/\s+/g, ' ').slice(0, 48)).join(' | ');
}

export function event(k: string, data: Record<string, unknown> = {}): void {
  if (tracing) lines.push(JSON.stringify({ k, t: performance.now(), ...data }));
}

/** Enqueue times of submit commands (keyed by the command object). */
export const enqueued = new WeakMap<object, number>();

if (tracing) {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) lines.push(JSON.stringify({ k: 'gc', t: e.startTime, dur: e.duration }));
  }).observe({ entryTypes: ['gc'] });
  writeFileSync(file!, '');
  setInterval(() => {
    if (lines.length) appendFileSync(file!, lines.splice(0).join('\n') + '\n');
  }, 1000).unref();
  process.on('exit', () => {
    lines.push(JSON.stringify({ k: 'eld', p50: h.percentile(50) / 1e6, p90: h.percentile(90) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6 }));
    appendFileSync(file!, lines.splice(0).join('\n') + '\n');
  });
}
