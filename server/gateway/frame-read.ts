// A worker's text frame, checked in the order its errors are answered: size, UTF-8, schema.
import { isUtf8 } from 'node:buffer';
import type { RawData } from 'ws';
import { parseWorkerFrame, type WorkerFrame } from '@orbit/protocol/frames';

export type FrameRead = { ok: true; frame: WorkerFrame; bytes: number } | { ok: false; message: string; close?: number };

export function readWorkerFrame(data: RawData, maxFrameBytes: number): FrameRead {
  const buf = Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]);
  // The socket accepts twice the limit, so an oversized frame still gets its error frame.
  if (buf.length > maxFrameBytes) return { ok: false, message: `frame over max_frame_bytes (${maxFrameBytes})`, close: 1009 };
  // ws skips UTF-8 validation, so invalid text gets its error frame and 1002, not a bare 1007.
  if (!isUtf8(buf)) return { ok: false, message: 'text frame is not valid UTF-8' };
  const parsed = parseWorkerFrame(buf.toString('utf8'));
  if (!parsed.ok) return { ok: false, message: parsed.message };
  return { ok: true, frame: parsed.frame, bytes: buf.length };
}
