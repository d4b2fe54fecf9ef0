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
// - Frames sent in one turn of the event loop leave in one socket write (batchWrites): the
//   gateway's profile was led by socket writes, one per frame (issue 19).
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { MAX_CLOSE_REASON_BYTES, truncateUtf8 } from '@orbit/protocol/strings';

const PROTOCOL_CLOSES: Record<number, string> = {
  1002: 'invalid WebSocket frame',
  1007: 'text frame is not valid UTF-8',
  1009: 'frame over the size limit',
};

/** Counts of batchWrites (server/metrics.ts: orbit_worker_frames_sent_total,
 * orbit_worker_socket_flushes_total). */
export interface WriteMeters {
  framesSent: { inc(n?: number): void };
  socketFlushes: { inc(n?: number): void };
}

type SendData = Parameters<WebSocket['send']>[0];
type SendOptions = Parameters<WebSocket['send']>[1];

export class WorkerSocket extends WebSocket {
  /** Set once a fatal error frame was sent, so a following close does not send a second one. */
  fatalSent = false;
  private raw: Duplex | null = null;
  private meters: WriteMeters | null = null;
  /** Frames written into the corked socket in this turn of the event loop (0: not corked). */
  private corkedFrames = 0;

  /** From now on, every frame (message, ping, pong) sent in one turn of the event loop goes out in
   * one write of `raw`, the socket under this WebSocket: the first one corks it and a setImmediate
   * uncorks it after the turn's I/O callbacks and their promise chains have run (a batch's
   * replies, the refills delivered right after them, the ping that goes with assignments). Each
   * frame stays its own WebSocket message, in the order sent; ws already corks each frame's header
   * and body together. Without this a frame was one write(2) each. */
  batchWrites(raw: Duplex, meters?: WriteMeters): void {
    this.raw = raw;
    this.meters = meters ?? null;
  }

  private corkTurn(): void {
    this.meters?.framesSent.inc();
    const raw = this.raw;
    if (raw === null || this.corkedFrames++ > 0) return;
    raw.cork();
    setImmediate(() => {
      this.corkedFrames = 0;
      this.meters?.socketFlushes.inc();
      // A destroyed socket dropped what it held; uncork is then a no-op.
      raw.uncork();
    });
  }

  override send(data: SendData, cb?: (err?: Error) => void): void;
  override send(data: SendData, options: SendOptions, cb?: (err?: Error) => void): void;
  override send(data: SendData, options?: SendOptions | ((err?: Error) => void), cb?: (err?: Error) => void): void {
    if (this.readyState === this.OPEN) this.corkTurn();
    // ws's own overloads take (data, cb) and (data, options, cb) alike.
    if (typeof options === 'function' || options === undefined) super.send(data, options);
    else super.send(data, options, cb);
  }

  override ping(...args: Parameters<WebSocket['ping']>): void {
    if (this.readyState === this.OPEN) this.corkTurn();
    super.ping(...args);
  }

  override pong(...args: Parameters<WebSocket['pong']>): void {
    if (this.readyState === this.OPEN) this.corkTurn();
    super.pong(...args);
  }

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
