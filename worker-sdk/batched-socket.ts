// The SDK's WebSocket: every frame it sends in one turn of the event loop — the starts of a batch
// of assignments, the results of handlers that finished together, the pong of the ping that came
// with them — leaves in one write of the TCP socket instead of one write(2) per frame (profiled:
// the SDK spent ~0.5 ms of CPU per task, much of it in socket writes). The first frame of a turn
// corks the socket (the one the HTTP upgrade handed over, from ws's public 'upgrade' event) and a
// setImmediate uncorks it once the turn's callbacks and promise chains have run. Every frame stays
// its own WebSocket message, in the order sent (ws corks each frame's header and body together).
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';

type Data = Parameters<WebSocket['send']>[0];
type Options = Parameters<WebSocket['send']>[1];
type Callback = (err?: Error) => void;

export class BatchedSocket extends WebSocket {
  private raw: Duplex | null = null;
  private corked = false;

  constructor(...args: ConstructorParameters<typeof WebSocket>) {
    super(...args);
    this.once('upgrade', (res) => (this.raw = res.socket));
  }

  /** Corks the socket for the rest of this turn of the event loop (once per turn). */
  private holdTurn(): void {
    const raw = this.raw;
    if (raw === null || this.corked || this.readyState !== WebSocket.OPEN) return;
    this.corked = true;
    raw.cork();
    setImmediate(() => {
      this.corked = false;
      raw.uncork();
    });
  }

  override send(data: Data, cb?: Callback): void;
  override send(data: Data, options: Options, cb?: Callback): void;
  override send(data: Data, options?: Options | Callback, cb?: Callback): void {
    this.holdTurn();
    if (typeof options === 'function' || options === undefined) super.send(data, options);
    else super.send(data, options, cb);
  }

  override pong(...args: Parameters<WebSocket['pong']>): void {
    this.holdTurn();
    super.pong(...args);
  }
}
