// WebSocket peers for the frame fuzz suite (test/fuzz-frames.test.ts): one interface over a `ws`
// client (openRaw, checked for leaks by the fixture) and over a hand-framed raw TCP socket, which
// can send what `ws` refuses to: invalid UTF-8 in a text frame.
import crypto from 'node:crypto';
import net from 'node:net';
import { openRaw } from './raw-worker.js';

export interface Close {
  code: number;
  reason: string;
}

export interface Peer {
  /** Frames received (parsed JSON; a frame that is not JSON is kept as {unparsed: text}). */
  inbox: any[];
  closed: Close | null;
  send(data: string | Buffer, binary?: boolean): void;
  /** Resolves once `done(inbox)` holds, the socket closed, or `ms` passed. */
  until(done: (inbox: any[]) => boolean, ms?: number): Promise<void>;
  /** Closes (1000) if still open and waits for the close, terminating after a second. */
  end(): Promise<void>;
}

class PeerBase {
  inbox: any[] = [];
  closed: Close | null = null;
  private wake = new Set<() => void>();
  push(data: Buffer): void {
    const text = data.toString('utf8');
    try {
      this.inbox.push(JSON.parse(text));
    } catch {
      this.inbox.push({ unparsed: text.slice(0, 200) });
    }
    this.notify();
  }
  setClosed(c: Close): void {
    this.closed ??= c;
    this.notify();
  }
  private notify(): void {
    for (const w of [...this.wake]) w();
  }
  until(done: (inbox: any[]) => boolean, ms = 5000): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!done(this.inbox) && !this.closed) return;
        clearTimeout(t);
        this.wake.delete(check);
        resolve();
      };
      const t = setTimeout(() => (this.wake.delete(check), resolve()), ms);
      this.wake.add(check);
      check();
    });
  }
}

/** A peer over the `ws` client of test/support/raw-worker.ts. */
export async function wsPeer(url: string, token: string): Promise<Peer> {
  const w = await openRaw(url, token);
  const p = new PeerBase();
  w.ws.on('error', () => {});
  w.ws.on('message', (d) => p.push(Buffer.isBuffer(d) ? d : Buffer.concat(d as Buffer[])));
  w.ws.on('close', (code, reason) => p.setClosed({ code, reason: reason.toString() }));
  return Object.assign(p, {
    send: (data: string | Buffer, binary = false) => {
      if (w.ws.readyState === w.ws.OPEN) w.ws.send(data, { binary });
    },
    end: async () => {
      if (!p.closed) w.ws.close(1000);
      await p.until(() => false, 1000);
      if (!p.closed) w.ws.terminate();
      await w.closed;
    },
  });
}

/** One masked client frame (FIN set). */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (n >= 126 && n < 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  } else if (n >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  const mask = crypto.randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < n; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([head, mask, body]);
}

/** A peer over a raw TCP socket speaking the WebSocket framing itself (text frames carry any bytes). */
export async function rawPeer(url: string, token: string): Promise<Peer> {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  sock.on('error', () => {});
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  const p = new PeerBase();
  let buf = Buffer.alloc(0);
  let upgraded = false;
  let opened: () => void = () => {};
  let failed: (e: Error) => void = () => {};
  const open = new Promise<void>((res, rej) => ((opened = res), (failed = rej)));
  sock.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      if (!/^HTTP\/1\.1 101 /.test(head)) return failed(new Error(`handshake refused: ${head.split('\r\n')[0]}`));
      upgraded = true;
      buf = buf.subarray(end + 4);
      opened();
    }
    while (buf.length >= 2) {
      const op = buf[0]! & 0x0f;
      let len = buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        len = buf.length >= 4 ? buf.readUInt16BE(2) : Infinity;
        off = 4;
      } else if (len === 127) {
        len = buf.length >= 10 ? Number(buf.readBigUInt64BE(2)) : Infinity;
        off = 10;
      }
      if (buf.length < off + len) return;
      const payload = buf.subarray(off, off + len);
      buf = buf.subarray(off + len);
      if (op === 0x1) p.push(payload);
      else if (op === 0x9) sock.write(frame(0xa, payload));
      else if (op === 0x8) {
        p.setClosed({ code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString('utf8') });
        sock.end(frame(0x8, payload.subarray(0, 2)));
      }
    }
  });
  sock.on('close', () => {
    failed(new Error('connection closed before the upgrade'));
    p.setClosed({ code: 1006, reason: 'socket closed without a close frame' });
  });
  sock.write(
    `GET /v1/workers/connect HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n` +
      `Sec-WebSocket-Protocol: orbit.worker.v1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
  );
  try {
    await open;
  } catch (e) {
    sock.destroy();
    throw e;
  }
  return Object.assign(p, {
    send: (data: string | Buffer, binary = false) => {
      if (!p.closed && sock.writable) sock.write(frame(binary ? 0x2 : 0x1, Buffer.isBuffer(data) ? data : Buffer.from(data)));
    },
    end: async () => {
      if (!p.closed && sock.writable) sock.write(frame(0x8, Buffer.from([0x03, 0xe8])));
      await p.until(() => false, 1000);
      sock.destroy();
    },
  });
}
