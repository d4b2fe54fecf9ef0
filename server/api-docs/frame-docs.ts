// What each worker-protocol frame is for, for the AsyncAPI document; the frames are described at
// length in docs/worker-protocol.md. Typed by the frame tables, so a new frame needs its line.
import type { GATEWAY_FRAMES, WORKER_FRAMES } from '@orbit/protocol/frames';

export const FRAME_DOCS: Record<keyof typeof WORKER_FRAMES | keyof typeof GATEWAY_FRAMES, string> = {
  hello:
    "The session's first frame, always: the worker's identity, the queues it consumes, its capacity, its handlers and the attempts it still holds after a reconnect. Answered by `hello.ok`, or by a fatal `error` and the close.",
  start:
    'Confirms the worker is about to run an attempt; handler code must not run before `start.ok`. From then on the attempt counts against `max_attempts`. A lost lease is a non-fatal `error` `LEASE_LOST`.',
  renew:
    "Extends the leases (and the permits they hold) of up to 1024 attempts to the database's now plus the queue's `lease_seconds`; answered by `renew.ok`.",
  result:
    'Ends an attempt: `succeeded` with its output, `failed`, `retry` (the effect certainly did not happen) or `unknown` (it may have). Answered by `result.ok` after the outcome commits; the same result again is deduplicated.',
  capacity: 'Changes how many attempts the session may hold at once (0-1024; 0 pauses its intake).',
  drain: 'Stops assignments to this session; the worker finishes what it holds, sends the results and closes with 1000. Answered by `drain.ok`.',
  'hello.ok': 'Accepts the session: its id, the lease and renewal timings, and which of the attempts named in `hello` it still holds.',
  'task.assign':
    'Assigns an attempt of a task to the session, sent after the claim committed: the lease is already running. Carries the task and, with a resource key, the frozen fencing token.',
  'start.ok': "Confirms `start`: the handler may run now; carries the lease's expiry.",
  'renew.ok': 'Answers `renew`: the new expiry of each lease still held, and the attempts whose leases were lost (stop working on those).',
  'result.ok': "Confirms a `result` after its outcome committed, with the task's new state and whether it was a replay.",
  'task.cancel': "An attempt's right to execute is gone (cancelled, lease expired, deadline passed): the worker must abort it.",
  error:
    'A refusal with a stable code (docs/errors.md). A fatal one is followed by the close; errors about one attempt (`LEASE_LOST`, a conflicting result, an unknown attempt, an oversized output) are not fatal.',
  'drain.ok': 'Confirms `drain`: no more assignments come to this session.',
  goaway: 'The node is shutting down: reconnect to any node and resume; the leases stay valid. The node then closes with 1001.',
};
