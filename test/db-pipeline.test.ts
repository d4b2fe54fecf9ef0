// Pipelined transactions (server/db/pipeline.ts): unread writes travel with the next statement as
// one multi-statement query. Against the real MariaDB: results stay each caller's own, a queued
// write's failure surfaces at the next await and rolls the whole transaction back, COMMIT carries
// the last writes, and prepared statements run after the queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, type TestDb } from './support/db.js';
import { withTransaction } from '../server/db/pool.js';
import { commitWith, isCommitted, pipelined, rawConnection, write } from '../server/db/pipeline.js';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query('CREATE TABLE pipe_t (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL)');
});
afterAll(async () => db?.drop());

const rows = async () => (await db.pool.query<RowDataPacket[]>('SELECT id, v FROM pipe_t ORDER BY id'))[0].map((r) => [r.id, r.v]);

describe('pipelined transactions', () => {
  it('sends queued writes with the next query and returns that query its own result', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    const seen = await withTransaction(db.pool, async (c) => {
      await write(c, 'INSERT INTO pipe_t VALUES (?, ?)', [1, "it's"]);
      await write(c, 'INSERT INTO pipe_t VALUES (?, ?)', [2, 'b;c']);
      const [r] = await c.query<RowDataPacket[]>('SELECT COUNT(*) AS n, MAX(v) AS m FROM pipe_t WHERE id <= ?', [2]);
      const [u] = await c.query('UPDATE pipe_t SET v = ? WHERE id = ?', ['x', 2]);
      return { n: Number(r[0]!.n), m: r[0]!.m as string, changed: (u as { affectedRows: number }).affectedRows };
    });
    expect(seen).toEqual({ n: 2, m: "it's", changed: 1 });
    expect(await rows()).toEqual([
      [1, "it's"],
      [2, 'x'],
    ]);
  });

  it('commits the last queued writes with COMMIT, and binary values keep their bytes', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    await withTransaction(db.pool, async (c) => {
      await write(c, 'INSERT INTO pipe_t VALUES (?, HEX(?))', [3, Buffer.from([0, 0x27, 0x3b, 0xff])]);
    });
    expect(await rows()).toEqual([[3, '00273BFF']]);
  });

  it("a queued write's failure fails the next query and rolls everything back", async () => {
    await db.pool.query('DELETE FROM pipe_t');
    await db.pool.query("INSERT INTO pipe_t VALUES (9, 'kept')");
    const err = await withTransaction(db.pool, async (c) => {
      await c.query("INSERT INTO pipe_t VALUES (10, 'a')");
      await write(c, "INSERT INTO pipe_t VALUES (9, 'duplicate')");
      await write(c, "INSERT INTO pipe_t VALUES (11, 'never')");
      await c.query('SELECT 1');
      return null;
    }).catch((e: unknown) => e as { errno?: number });
    expect(err?.errno).toBe(1062);
    expect(await rows()).toEqual([[9, 'kept']]);
  });

  it('execute (prepared) runs after the queued writes', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    const n = await withTransaction(db.pool, async (c) => {
      await write(c, "INSERT INTO pipe_t VALUES (20, 'q')");
      const [r] = await c.execute<RowDataPacket[]>('SELECT COUNT(*) AS n FROM pipe_t WHERE id = ?', [20]);
      return Number(r[0]!.n);
    });
    expect(n).toBe(1);
  });

  it('outside a pipelined connection a write runs at once; the raw connection is reachable', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    const conn = await db.pool.getConnection();
    try {
      await write(conn, "INSERT INTO pipe_t VALUES (30, 'now')");
      expect(await rows()).toEqual([[30, 'now']]);
      const p = pipelined(conn);
      expect(rawConnection(p)).toBe(conn);
      expect(rawConnection(conn)).toBe(conn);
    } finally {
      conn.release();
    }
  });

  it('commitWith sends the last statement with the COMMIT: its result comes back, and a later failure cannot undo it', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    await db.pool.query("INSERT INTO pipe_t VALUES (40, 'a'), (41, 'b')");
    let changed = -1;
    const err = await withTransaction(db.pool, async (c) => {
      await write(c, "INSERT INTO pipe_t VALUES (42, 'queued')");
      const [r] = await commitWith(c, 'UPDATE pipe_t SET v = ? WHERE id IN (?, ?)', ['z', 40, 41]);
      changed = (r as { affectedRows: number }).affectedRows;
      expect(isCommitted(c)).toBe(true);
      // A write queued now would never be sent: refused.
      await expect(write(c, "INSERT INTO pipe_t VALUES (43, 'lost')")).rejects.toThrow(/after commitWith/);
      throw new Error('after the commit');
    }).catch((e: unknown) => e as Error);
    expect(err?.message).toBe('after the commit');
    expect(changed).toBe(2);
    expect(await rows()).toEqual([
      [40, 'z'],
      [41, 'z'],
      [42, 'queued'],
    ]);
  });
});
