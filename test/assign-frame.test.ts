// task.assign with the stored payload spliced in as JSON text (server/gateway/session.ts assignText):
// the frame must be exactly what serializing the parsed payload gave, for any payload.
import { describe, expect, it } from 'vitest';
import { parseGatewayFrame } from '@orbit/protocol/frames';
import { assignText } from '../server/gateway/session.js';
import type { Assignment } from '../server/dispatch/grant.js';

const base: Omit<Assignment, 'payloadJson' | 'concurrencyToken'> = {
  attemptId: 'a'.repeat(32),
  attemptNo: 2,
  leaseExpiresAt: '2026-12-02T16:00:00.000Z',
  queueId: 'b'.repeat(32),
  task: {
    id: 'c'.repeat(32),
    queue_id: 'b'.repeat(32),
    handler: 'h',
    handler_version: 'v1',
    payload_version: '1',
    priority: 0,
    deadline_at: '2026-12-02T17:00:00.000Z',
    business_key: 'bk "}}" \u2603',
  },
};

const payloads: unknown[] = [
  {},
  [],
  null,
  0,
  'text with "quotes", }} and \\ backslashes',
  { i: 1, nested: { deep: [1, { x: '}}' }] }, emoji: '\u{1F680}', ctrl: '\u0001\n' },
  [{ a: 1 }, 'b', true, null, -1.5e-7],
];

describe('task.assign frame text', () => {
  for (const [n, payload] of payloads.entries()) {
    for (const token of [null, '42']) {
      it(`payload ${n}, ${token === null ? 'unkeyed' : 'with a concurrency token'}: same frame as serializing the parsed payload`, () => {
        const a: Assignment = { ...base, concurrencyToken: token, payloadJson: JSON.stringify(payload) };
        const text = assignText(a);
        const expected = {
          type: 'task.assign',
          attempt_id: a.attemptId,
          attempt_no: a.attemptNo,
          lease_expires_at: a.leaseExpiresAt,
          ...(token !== null ? { concurrency_token: token } : {}),
          task: { ...a.task, payload },
        };
        expect(JSON.parse(text)).toEqual(expected);
        const parsed = parseGatewayFrame(text);
        expect(parsed).toEqual({ ok: true, frame: expected });
      });
    }
  }

  it('a payload stored with whitespace (as another writer may have stored it) arrives parsed the same', () => {
    const a: Assignment = { ...base, concurrencyToken: null, payloadJson: ' { "a" : [ 1 , 2 ] } ' };
    expect(JSON.parse(assignText(a)).task.payload).toEqual({ a: [1, 2] });
  });
});
