// What the worker frame fuzzer (fuzz-frames) expects of each generated frame: the documented
// outcome of a text frame from the schemas of protocol/frames.ts and docs/worker-protocol.md.
import { ERROR_CODES, type ErrorCode } from '../../protocol/errors.js';
import { WORKER_FRAMES } from '../../protocol/frames.js';
import { isId, judge } from './fuzz-schema.js';

export type Phase = 'pre' | 'post';
export type Expect =
  | { kind: 'fatal'; code: ErrorCode; close: number; why: string }
  | { kind: 'hello'; mustRefuse: boolean }
  | { kind: 'reply'; type: string; id?: unknown; orFatal: boolean }
  | { kind: 'silent' };
export interface FrameCase {
  phase: Phase;
  data: string | Buffer;
  binary?: boolean;
  /** Send over the hand-framed socket (needed for invalid UTF-8). */
  raw?: boolean;
  expect: Expect;
  /** The mutation applied, for failure reports. */
  how?: string;
}

export const protocolError = (why: string, close = 1002): Expect => ({ kind: 'fatal', code: 'PROTOCOL_ERROR', close, why });
// A valid hello naming only the real queue (live, the credential's own) may be refused only for
// its worker_id: the first hello of a generated worker_id froze another concurrency_keys. NOT_FOUND,
// PERMISSION_DENIED or RESOURCE_RETIRED there would be a refusal of a queue that exists and is usable.
export const HELLO_REFUSALS: ErrorCode[] = ['STATE_CONFLICT'];
export const closeOf = (code: ErrorCode) => ERROR_CODES[code].close ?? 1008;

/** The documented outcome of a text frame, from the schemas (docs/worker-protocol.md), on a gateway with
 * max_frame_bytes = maxFrame whose credential's one live queue is `queue`. */
export function documentedOutcome(phase: Phase, text: string, gw: { maxFrame: number; queue: string }): Expect {
  if (Buffer.byteLength(text) > gw.maxFrame) return protocolError('over max_frame_bytes', 1009);
  const v = judge(text, (o) =>
    typeof o.type === 'string' && Object.hasOwn(WORKER_FRAMES, o.type) ? WORKER_FRAMES[o.type as keyof typeof WORKER_FRAMES] : 'unknown type',
  );
  if (!v.ok) return protocolError(v.why);
  const fr = v.value;
  if (phase === 'pre')
    return fr.type === 'hello' ? { kind: 'hello', mustRefuse: fr.queues.some((q: string) => q !== gw.queue) } : protocolError('first frame is not hello');
  switch (fr.type) {
    case 'hello':
      return protocolError('second hello');
    case 'start':
    case 'result':
      return { kind: 'reply', type: 'error', id: fr.attempt_id, orFatal: !isId(fr.attempt_id) };
    case 'renew':
      return { kind: 'reply', type: 'renew.ok', orFatal: !fr.attempt_ids.every(isId) };
    case 'drain':
      return { kind: 'reply', type: 'drain.ok', orFatal: false };
    default:
      return { kind: 'silent' };
  }
}
