// Flow control of one worker session: how much of the node it may hold at once. A frame is "in
// flight" from its receipt to its answer (its reply sent after the commit, or its error); a reply
// is "unsent" from session.send() until the socket has written it. When the session reaches either
// limit — ORBIT_SESSION_MAX_FRAMES_IN_FLIGHT frames, or ORBIT_SESSION_MAX_BYTES_IN_FLIGHT bytes of
// frames in flight plus unsent replies — the gateway stops reading its socket (ws's pause(), which
// pauses the net.Socket): the kernel's receive buffer fills, TCP's window closes and the worker's
// own send() buffers, so a flood costs the node nothing more. Reading resumes once the session is
// back under half of both limits, as its frames commit and its replies drain.
//
// Before this, one session's 20 000 renew frames were all read, parsed and queued at once (776 MB of
// gateway RSS, every other producer waiting 24.6 s: issue 18). ws still emits the frames of the
// chunk it is parsing when pause() is called, so a session can overshoot the frame limit by one
// socket read (at most 64 KiB of frames); nothing else is read until it is under the limits again.
// Frames are never dropped or refused for being over a limit: valid work is delayed, not failed.
import type { Counter, Gauge } from 'prom-client';

export interface FlowLimits {
  /** Frames in flight at which reading pauses. */
  maxFrames: number;
  /** Bytes (frames in flight + unsent replies) at which reading pauses. */
  maxBytes: number;
}

/** The node-wide meters every window reports to (server/metrics.ts). */
export interface FlowMeters {
  sessionFramesInFlight: Pick<Gauge, 'inc' | 'dec'>;
  sessionsPaused: Pick<Gauge, 'inc' | 'dec'>;
  sessionPauses: Pick<Counter, 'inc'>;
}

/** The part of a WebSocket a window drives (ws's WebSocket). */
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
    private readonly limits: FlowLimits,
    private readonly meters: FlowMeters,
  ) {}

  /** A frame of `size` bytes was received; call the returned function once it is answered (more
   * calls do nothing). */
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

  /** Sends `text`, counting it as unsent until the socket has written it. */
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

  /** The session ended: reading resumes for good (ws must read the peer's close frame; the session
   * ignores any other frame now), and the window leaves the paused count. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.paused) this.setPaused(false);
  }

  /** True while reading is paused (for tests and logs). */
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
