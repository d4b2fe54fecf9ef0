// The gateway's WebSocket: close() never throws on a reason built from worker input (cut to 123
// bytes on a code-point boundary); every protocol-error close, ws's own included, is preceded by
// the PROTOCOL_ERROR frame; and the frames of one event-loop turn leave in one socket write.
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { MAX_CLOSE_REASON_BYTES, truncateUtf8 } from '@orbit/protocol/strings';
import type { Metrics } from '../metrics.js';

const PROTOCOL_CLOSES: Record<number, string> = {
  1002: 'invalid WebSocket frame',
  1007: 'text frame is not valid UTF-8',
  1009: 'frame over the size limit',
};

type WriteMeters = Pick<Metrics, 'framesSent' | 'socketFlushes'>;

type SendData = Parameters<WebSocket['send']>[0];
type SendOptions = Parameters<WebSocket['send']>[1];

export class WorkerSocket extends WebSocket {
  fatalSent = false;
  private raw: Duplex | null = null;
  private meters: WriteMeters | null = null;
  private corkedFrames = 0;

  /** Corks `raw` at the first frame of a turn and uncorks it after the turn's callbacks and their
   * promise chains, so the turn's frames leave in one write. */
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
      raw.uncork();
    });
  }

  override send(data: SendData, cb?: (err?: Error) => void): void;
  override send(data: SendData, options: SendOptions, cb?: (err?: Error) => void): void;
  override send(data: SendData, options?: SendOptions | ((err?: Error) => void), cb?: (err?: Error) => void): void {
    if (this.readyState === this.OPEN) this.corkTurn();
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
      // Never let a close take the node down: end the connection instead.
      this.terminate();
    }
  }
}
