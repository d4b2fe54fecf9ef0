// ORBIT_PROCESSES > 1: the processes of one node tell each other about new work as a single node
// tells itself. A submit, a retry or a result wakes the sessions of its queues in the process that
// committed it (server/work-signals.ts); a session of the same queue in a sibling process would
// otherwise find that work only by its dispatcher's poll (10 ms after a productive round, up to
// 250 ms when idle: docs/design.md "Cross-node effects"). Each process sends the queues it woke to
// the primary — once per event-loop turn, each queue once — and the primary passes them on to the
// other processes, which wake their own sessions of those queues. A wake is a hint: a lost one
// costs a poll interval, never correctness.
import type { Worker } from 'node:cluster';
import type { NodeSignals, WakeCause } from '../work-signals.js';

export interface WakeMessage {
  orbit: 'wake';
  queues: [string, WakeCause][];
}

export function isWakeMessage(m: unknown): m is WakeMessage {
  const o = m as { orbit?: unknown; queues?: unknown } | null;
  return o?.orbit === 'wake' && Array.isArray(o.queues);
}

/** In a gateway process: sends this process's wake-ups to the primary, replays its siblings'. */
export function relayWakes(signals: NodeSignals): void {
  let pending: Map<string, WakeCause> | null = null;
  let replaying = false;
  const flush = () => {
    const p = pending;
    pending = null;
    if (p && process.connected) process.send!({ orbit: 'wake', queues: [...p] } satisfies WakeMessage);
  };
  signals.onWork((queueId, cause) => {
    if (replaying) return; // a sibling's wake-up, not this process's news
    if (!pending) {
      pending = new Map();
      setImmediate(flush);
    }
    // `work` (new tasks) implies what `released` (freed permits) says.
    if (pending.get(queueId) !== 'work') pending.set(queueId, cause);
  });
  process.on('message', (m: unknown) => {
    if (!isWakeMessage(m)) return;
    replaying = true;
    try {
      for (const [q, cause] of m.queues) signals.wake([q], cause);
    } finally {
      replaying = false;
    }
  });
}

/** In the primary: passes one process's wake-ups on to the other ready processes. */
export function forwardWakes(from: Worker, m: WakeMessage, ready: Worker[]): void {
  for (const w of ready) if (w !== from && w.isConnected()) w.send(m);
}
