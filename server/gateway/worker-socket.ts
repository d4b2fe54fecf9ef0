// The gateway's WebSocket class (ws's `WebSocket` server option). Two guarantees that ws alone
// does not give:
// - close() can never throw on its reason: ws throws a RangeError for a reason over 123 bytes,
//   and a reason built from worker input (an unknown field named 60 × 'é') once crashed the node
//   from inside the message handler. The reason is cut to 123 UTF-8 bytes on a code-point boundary.
// - Every protocol-error close is preceded by the PROTOCOL_ERROR error frame that
//   worker-protocol.md requires, including the closes ws decides by itself (a frame over
//   maxPayload → 1009, bad opcode / RSV bits / unmasked frame → 1002), which it makes by calling
//   close() on this object before it emits 'error'. Invalid UTF-8 (ws's 1007, not a code of the
//   spec) is a protocol error: 1002.
import { WebSocket } from 'ws';
import { MAX_CLOSE_REASON_BYTES, truncateUtf8 } from '@orbit/protocol/strings';

const PROTOCOL_CLOSES: Record<number, string> = {
  1002: 'invalid WebSocket frame',
  1007: 'text frame is not valid UTF-8',
  1009: 'frame over the size limit',
};

export class WorkerSocket extends WebSocket {
  /** Set once a fatal error frame was sent, so a following close does not send a second one. */
  fatalSent = false;

  /** Sends a fatal `error` frame (at most once per socket). */
  sendFatal(frame: { type: 'error'; code: string; message: string; fatal: true }): void {
    if (this.fatalSent) return;
    this.fatalSent = true;
    if (this.readyState === this.OPEN) this.send(JSON.stringify(frame));
  }

  override close(code?: number, reason?: string | Buffer): void {
    if (code !== undefined && PROTOCOL_CLOSES[code] !== undefined && this.readyState === this.OPEN) {
      this.sendFatal({ type: 'error', code: 'PROTOCOL_ERROR', message: String(reason || PROTOCOL_CLOSES[code]), fatal: true });
    }
    if (code === 1007) code = 1002;
    const cut = typeof reason === 'string' ? truncateUtf8(reason, MAX_CLOSE_REASON_BYTES) : reason;
    try {
      super.close(code, cut);
    } catch {
      // Only an invalid code could still throw here (all codes used are valid); never let a
      // close take the node down: end the connection instead.
      this.terminate();
    }
  }
}
