// Flow control of one session: at either limit (frames in flight, or their bytes plus unsent
// replies) the gateway stops reading the socket, so TCP pushes back on the worker and a flood
// costs the node nothing more. Reading resumes below half of both limits. Frames are delayed,
// never refused.
import type { Metrics } from '../metrics.js';

export interface PausableSocket {
  pause(): void;
  resume(): void;
  send(data: string, cb?: (err?: Error) => void): void;
}

export class FrameWindow {
  private frames = 0;
  private bytes = 0;
  private unsent = 0;
  private paused = false;
  private closed = false;

  constructor(
    private readonly ws: PausableSocket,
    private readonly limits: { maxFrames: number; maxBytes: number },
    private readonly meters: Pick<Metrics, 'sessionFramesInFlight' | 'sessionsPaused' | 'sessionPauses'>,
  ) {}

  /** Call the returned function once the frame is answered. */
  enter(size: number): () => void {
    this.frames++;
    this.bytes += size;
    this.meters.sessionFramesInFlight.inc();
    this.check();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.frames--;
      this.bytes -= size;
      this.meters.sessionFramesInFlight.dec();
      this.check();
    };
  }

  send(text: string): void {
    const n = Buffer.byteLength(text);
    this.unsent += n;
    let written = false;
    this.ws.send(text, () => {
      // ws calls back once, when written or when the socket closed first.
      if (written) return;
      written = true;
      this.unsent -= n;
      this.check();
    });
    this.check();
  }

  /** Reading resumes for good: ws must read the peer's close frame. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.paused) this.setPaused(false);
  }

  get isPaused(): boolean {
    return this.paused;
  }

  private check(): void {
    if (this.closed) return;
    const held = this.bytes + this.unsent;
    if (!this.paused && (this.frames >= this.limits.maxFrames || held >= this.limits.maxBytes)) this.setPaused(true);
    else if (this.paused && this.frames <= this.limits.maxFrames / 2 && held <= this.limits.maxBytes / 2) this.setPaused(false);
  }

  private setPaused(on: boolean): void {
    this.paused = on;
    if (on) {
      this.ws.pause();
      this.meters.sessionsPaused.inc();
      this.meters.sessionPauses.inc();
    } else {
      this.ws.resume();
      this.meters.sessionsPaused.dec();
    }
  }
}
