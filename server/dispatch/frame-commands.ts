// What a start or result frame asks of its transaction (FrameCommand) and what it is answered
// (FrameOutcome): the vocabulary shared by the frame committer (frame-committer.ts) and the two
// steps it runs in one transaction (start-frames.ts, result-frames.ts).
import { OrbitError } from '@orbit/protocol/errors';
import type { ResultFrame } from '@orbit/protocol/frames';

export interface Identity {
  namespaceId: string;
  workerId: string;
  /** The session's credential: checked (and share-locked) inside each transaction. */
  credentialId: string;
}

export interface ResultReply {
  type: 'result.ok';
  attempt_id: string;
  deduplicated: boolean;
  task_state: string;
}

export type FrameCommand =
  | { kind: 'start'; who: Identity; attemptId: string; /** the attempt's queue when the session holds it */ queueId: string | null }
  | { kind: 'result'; who: Identity; frame: ResultFrame };

export type FrameOutcome =
  | { ok: true; kind: 'start'; leaseExpiresAt: string }
  | { ok: true; kind: 'result'; reply: ResultReply; freedQueues: string[] }
  | { ok: false; error: OrbitError }
  /** The item's own transaction failed unexpectedly (a batch retried item by item): the session's
   * boundary answers it (UNAVAILABLE for a refusing database, else INTERNAL, reported). */
  | { ok: false; thrown: unknown };

export const fail = (code: ConstructorParameters<typeof OrbitError>[0], message: string, attemptId: string): FrameOutcome => ({
  ok: false,
  error: new OrbitError(code, message, { attempt_id: attemptId }),
});

/** A result's output as stored (JSON text, null without output), serialized once per frame: the
 * size limit, the batch weight and the row all read it (it was stringified three times). */
const outputTexts = new WeakMap<ResultFrame, string | null>();
export function outputJson(f: ResultFrame): string | null {
  let text = outputTexts.get(f);
  if (text === undefined) {
    text = f.output === undefined ? null : JSON.stringify(f.output);
    outputTexts.set(f, text);
  }
  return text;
}
