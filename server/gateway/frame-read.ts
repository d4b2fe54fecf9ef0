// A worker's text frame off the socket, checked in the order its errors are answered: size, UTF-8,
// then the shared schemas (protocol/frames). Session.onMessage answers a failure as a protocol
// error with the close code given (1002 when none).
import { isUtf8 } from 'node:buffer';
import type { RawData } from 'ws';
import { parseWorkerFrame, type WorkerFrame } from '@orbit/protocol/frames';

export type FrameRead = { ok: true; frame: WorkerFrame; bytes: number } | { ok: false; message: string; close?: number };

export function readWorkerFrame(data: RawData, maxFrameBytes: number): FrameRead {
  const buf = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
  // The socket accepts up to twice the limit so that an oversized frame still gets its error
  // frame before the 1009 close (beyond that, ws closes with 1009 by itself and WorkerSocket
  // sends the error frame).
  if (buf.length > maxFrameBytes) return { ok: false, message: `frame over max_frame_bytes (${maxFrameBytes})`, close: 1009 };
  // ws skips UTF-8 validation (skipUTF8Validation): invalid text is a protocol error with its
  // error frame and 1002 here, instead of ws's bare 1007.
  if (!isUtf8(buf)) return { ok: false, message: 'text frame is not valid UTF-8' };
  const parsed = parseWorkerFrame(buf.toString('utf8'));
  if (!parsed.ok) return { ok: false, message: parsed.message };
  return { ok: true, frame: parsed.frame, bytes: buf.length };
}
