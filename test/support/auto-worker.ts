// A raw worker that answers task.assign frames by itself, according to a `mode` in the payload,
// so many sessions of several applications send start/result frames at the same moment (what the
// gateway's coalesced frame transactions batch). Used by the scale-out property test.
import type { CredentialsFile } from '../../server/admin/bootstrap.js';
import { hello, openRaw, type RawWorker } from './raw-worker.js';

/** What the worker does with attempt 1 of a task (later attempts always succeed):
 * ok/fail/retry/unknown: start then that result; direct: result from LEASED without start;
 * park-leased: nothing (the lease is left to expire); park-running: start only (expires RUNNING);
 * park-cancel: nothing, then the test cancels the LEASED task over HTTP (RUNNING is not cancellable). */
export type Mode = 'ok' | 'fail' | 'retry' | 'unknown' | 'direct' | 'park-leased' | 'park-running' | 'park-cancel';

export interface Parked {
  mode: Mode;
  attemptId: string;
  taskId: string;
}

export interface AutoWorker {
  w: RawWorker;
  /** Attempts this worker deliberately left live (see Mode). */
  parked: Parked[];
  /** Replies that were errors (unexpected: the test asserts there are none besides cancels). */
  errors: any[];
  /** Assignments received. */
  assigned: number;
  close(): void;
}

export async function autoWorker(url: string, t: CredentialsFile, queueIds: string[], capacity = 4): Promise<AutoWorker> {
  const w = await openRaw(url, t.token);
  w.send(hello(queueIds, { capacity, concurrency_keys: true }));
  await w.next('hello.ok');
  const aw: AutoWorker = { w, parked: [], errors: [], assigned: 0, close: () => w.close() };
  const send = (f: Record<string, unknown>) => w.send(f);
  w.ws.on('message', (data) => {
    const f = JSON.parse(data.toString());
    // The raw worker keeps every unclaimed frame; this worker consumes them here instead.
    w.frames.length = 0;
    if (f.type === 'error') {
      // A cancelled attempt's late result is expected to be refused; anything else is recorded.
      if (f.code !== 'LEASE_LOST') aw.errors.push(f);
      return;
    }
    if (f.type !== 'task.assign') return;
    aw.assigned++;
    const id = f.attempt_id as string;
    const mode: Mode = f.attempt_no === 1 ? ((f.task.payload as { mode: Mode }).mode ?? 'ok') : 'ok';
    const err = { code: 'E_TEST', message: `mode ${mode}` };
    switch (mode) {
      case 'ok':
        send({ type: 'start', attempt_id: id });
        send({ type: 'result', attempt_id: id, outcome: 'succeeded', output: { by: t.application_id } });
        break;
      case 'fail':
        send({ type: 'start', attempt_id: id });
        send({ type: 'result', attempt_id: id, outcome: 'failed', error: err });
        break;
      case 'retry':
        send({ type: 'start', attempt_id: id });
        send({ type: 'result', attempt_id: id, outcome: 'retry', error: err, retry_after_ms: 0 });
        break;
      case 'unknown':
        send({ type: 'start', attempt_id: id });
        send({ type: 'result', attempt_id: id, outcome: 'unknown', error: err });
        break;
      case 'direct':
        send({ type: 'result', attempt_id: id, outcome: 'succeeded' });
        break;
      case 'park-leased':
      case 'park-cancel':
        aw.parked.push({ mode, attemptId: id, taskId: f.task.id });
        break;
      case 'park-running':
        send({ type: 'start', attempt_id: id });
        aw.parked.push({ mode, attemptId: id, taskId: f.task.id });
        break;
    }
  });
  return aw;
}
