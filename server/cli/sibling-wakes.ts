// The processes of one node tell each other about new work as a single node tells itself: a
// session in a sibling process would otherwise find it only by its dispatcher's poll. Each process
// sends the queues it woke, once per event-loop turn, to the primary, which passes them to the
// others (processes.ts). A wake is a hint: a lost one costs a poll interval, never correctness.
import type { WorkSignalSource, WorkSignals } from '../work-signals.js';

export interface WakeMessage {
  orbit: 'wake';
  queues: string[];
}

export function isWakeMessage(m: unknown): m is WakeMessage {
  const o = m as { orbit?: unknown; queues?: unknown } | null;
  return o?.orbit === 'wake' && Array.isArray(o.queues);
}

/** In a gateway process. */
export function relayWakes(signals: WorkSignals & WorkSignalSource): void {
  let pending: Set<string> | null = null;
  let replaying = false;
  signals.onWork((queueId) => {
    if (replaying) return; // a sibling's wake-up, not this process's news
    if (!pending) {
      const queues = (pending = new Set());
      setImmediate(() => {
        pending = null;
        if (process.connected) process.send!({ orbit: 'wake', queues: [...queues] } satisfies WakeMessage);
      });
    }
    pending.add(queueId);
  });
  process.on('message', (m: unknown) => {
    if (!isWakeMessage(m)) return;
    replaying = true;
    try {
      signals.wake(m.queues);
    } finally {
      replaying = false;
    }
  });
}
