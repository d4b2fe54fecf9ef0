// Pipelined transactions (server/db/pipeline.ts): unread writes travel with the next statement as
// one multi-statement query. Against the real MariaDB: results stay each caller's own, a queued
// write's failure surfaces at the next await and rolls the whole transaction back, COMMIT carries
// the last writes, and prepared statements run after the queue; texts that together exceed the
// statement budget (db/packet-budget.ts: the server's max_allowed_packet, read from it) go in
// several round trips, and multi-row statements in several chunks.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RowDataPacket } from 'mysql2/promise';
import { createTestDb, type TestDb } from './support/db.js';
import { transactionOn, withTransaction } from '../server/db/pool.js';
import { commitWithAll, Tx, transactionStats, write } from '../server/db/pipeline.js';
import { getTask } from '../server/db/tasks.js';
import { budgetOf, budgetStats, chunkRows, readPacketBudget, StatementTooLarge } from '../server/db/packet-budget.js';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query('CREATE TABLE pipe_t (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL)');
  await db.pool.query('CREATE TABLE pipe_big (id INT PRIMARY KEY, v LONGTEXT NOT NULL)');
});
afterAll(async () => db?.drop());

/** False: the lines under it are there for tsc (@ts-expect-error), not to run. */
const typeMistakes = false as boolean;

const rows = async () => (await db.pool.query<RowDataPacket[]>('SELECT id, v FROM pipe_t ORDER BY id'))[0].map((r) => [r.id, r.v]);

describe('pipelined transactions', () => {
  it('sends queued writes with the next query and returns that query its own result', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    const trips = transactionStats.roundTrips;
    const seen = await withTransaction(db.pool, async (c) => {
      await write(c, 'INSERT INTO pipe_t VALUES (?, ?)', [1, "it's"]);
      await write(c, 'INSERT INTO pipe_t VALUES (?, ?)', [2, 'b;c']);
      const [r] = await c.query<RowDataPacket[]>('SELECT COUNT(*) AS n, MAX(v) AS m FROM pipe_t WHERE id <= ?', [2]);
      const [u] = await c.query('UPDATE pipe_t SET v = ? WHERE id = ?', ['x', 2]);
      return { n: Number(r[0]!.n), m: r[0]!.m as string, changed: (u as { affectedRows: number }).affectedRows };
    });
    expect(seen).toEqual({ n: 2, m: "it's", changed: 1 });
    // START TRANSACTION and the two writes travel with the SELECT, then the UPDATE, then COMMIT.
    expect(transactionStats.roundTrips - trips).toBe(3);
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

  it('a Tx is its own object on the connection, and the types keep a transaction and a pooled connection apart', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    const conn = await db.pool.getConnection();
    try {
      await transactionOn(conn, 'other', async (tx) => {
        expect(tx).toBeInstanceOf(Tx);
        expect(tx.conn).toBe(conn);
        await write(tx, "INSERT INTO pipe_t VALUES (30, 'tx')");
        // Deferred writes (START TRANSACTION too) wait in the transaction's own state for its next
        // round trip: nothing was sent yet.
        expect(tx.pending).toEqual(['START TRANSACTION /* other */', "INSERT INTO pipe_t VALUES (30, 'tx')"]);
        if (typeMistakes) {
          // A transaction cannot start another one on its connection (tsc rejects these lines).
          // @ts-expect-error transactionOn takes a pooled connection, not a Tx
          await transactionOn(tx, 'other', async () => null);
          // @ts-expect-error withTransaction takes the pool
          await withTransaction(tx, async () => null);
        }
      });
      expect(await rows()).toEqual([[30, 'tx']]);
      if (typeMistakes) {
        // A pooled connection in autocommit is no transaction: a deferred write or a commitWithAll
        // on it would run at once, outside any lock (tsc rejects these lines).
        // @ts-expect-error write takes a Tx
        await write(conn, "INSERT INTO pipe_t VALUES (31, 'autocommit')");
        // @ts-expect-error commitWithAll takes a Tx
        await commitWithAll(conn, [['SELECT 1', []]]);
        // @ts-expect-error a locking read (FOR UPDATE) takes a Tx: its lock would end with the statement
        await getTask(conn, 'ns', 'id', 'update');
      }
    } finally {
      conn.release();
    }
  });

  it('commitWithAll sends the last statement with the COMMIT: its result comes back, and a later failure cannot undo it', async () => {
    await db.pool.query('DELETE FROM pipe_t');
    await db.pool.query("INSERT INTO pipe_t VALUES (40, 'a'), (41, 'b')");
    let changed = -1;
    const trips = transactionStats.roundTrips;
    const err = await withTransaction(db.pool, async (c) => {
      await write(c, "INSERT INTO pipe_t VALUES (42, 'queued')");
      const [r] = (await commitWithAll(c, [['UPDATE pipe_t SET v = ? WHERE id IN (?, ?)', ['z', 40, 41]]]))[0]!;
      changed = (r as { affectedRows: number }).affectedRows;
      expect(c.committed).toBe(true);
      // A write queued now would never be sent: refused.
      await expect(write(c, "INSERT INTO pipe_t VALUES (43, 'lost')")).rejects.toThrow(/after commitWithAll/);
      throw new Error('after the commit');
    }).catch((e: unknown) => e as Error);
    expect(err?.message).toBe('after the commit');
    expect(changed).toBe(2);
    // START TRANSACTION, the queued INSERT, the UPDATE and its COMMIT: one round trip.
    expect(transactionStats.roundTrips - trips).toBe(1);
    expect(await rows()).toEqual([
      [40, 'z'],
      [41, 'z'],
      [42, 'queued'],
    ]);
  });
});

describe('the statement budget', () => {
  const MiB = 1024 * 1024;
  const big = async () => (await db.pool.query<RowDataPacket[]>('SELECT id, SHA2(v, 256) AS h FROM pipe_big ORDER BY id'))[0].map((r) => [r.id, r.h]);
  const sha = (v: string) => crypto.createHash('sha256').update(v).digest('hex');

  it('is read from the server: max_allowed_packet (16 MiB, set by the embedded server) less 64 KiB, for every connection of the pool', async () => {
    expect(await readPacketBudget(db.pool)).toEqual({ maxAllowedPacket: 16 * MiB, bytes: 16 * MiB - 64 * 1024 });
    await withTransaction(db.pool, async (c) => expect(budgetOf(c).bytes).toBe(16 * MiB - 64 * 1024));
  });

  it('queued writes that together exceed it go in several round trips, in order, and commit whole', async () => {
    await readPacketBudget(db.pool);
    await db.pool.query('DELETE FROM pipe_big');
    // Three writes of 6 MiB each: one 18 MiB query before the budget (errno 1153, connection dropped).
    const values = [1, 2, 3].map((i) => `${i} it's é `.repeat((6 * MiB) / 10));
    const trips = transactionStats.roundTrips;
    const splits = budgetStats.splits;
    await withTransaction(db.pool, async (c) => {
      for (const [i, v] of values.entries()) await write(c, 'INSERT INTO pipe_big VALUES (?, ?)', [i, v]);
      await write(c, 'UPDATE pipe_big SET v = CONCAT(v, ?) WHERE id = ?', ['!', 0]);
    });
    expect(transactionStats.roundTrips - trips).toBeGreaterThanOrEqual(2);
    expect(budgetStats.splits).toBeGreaterThan(splits);
    expect(await big()).toEqual([
      [0, sha(values[0]! + '!')],
      [1, sha(values[1]!)],
      [2, sha(values[2]!)],
    ]);
  });

  it('a statement that alone exceeds it is refused before it is sent: nothing written, the connection serves on', async () => {
    const b = await readPacketBudget(db.pool);
    await db.pool.query('DELETE FROM pipe_big');
    const err = await withTransaction(db.pool, async (c) => {
      await write(c, 'INSERT INTO pipe_big VALUES (?, ?)', [1, 'small']);
      await write(c, 'INSERT INTO pipe_big VALUES (?, ?)', [2, 'x'.repeat(b.bytes)]);
      await c.query('SELECT 1');
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StatementTooLarge);
    expect((err as Error).message).toMatch(/exceeds the statement budget of 16711680 bytes \(max_allowed_packet 16777216\)/);
    expect(await big()).toEqual([]);
    await withTransaction(db.pool, (c) => write(c, 'INSERT INTO pipe_big VALUES (?, ?)', [3, 'after']));
    expect(await big()).toEqual([[3, sha('after')]]);
  });

  it('chunkRows cuts a multi-row statement within it from the escaped size of each row; a row that alone exceeds it is refused', async () => {
    await readPacketBudget(db.pool);
    await db.pool.query('DELETE FROM pipe_big');
    // 5 rows of 3 MiB: up to 6 MiB each once escaped (all quotes), so two rows per 16 MiB statement.
    const rows = [0, 1, 2, 3, 4].map((id) => ({ id, v: 'x'.repeat(3 * MiB) }));
    await withTransaction(db.pool, async (c) => {
      const chunks = chunkRows(c, rows, (r) => [r.id, r.v]);
      expect(chunks.map((k) => k.map((r) => r.id))).toEqual([[0, 1], [2, 3], [4]]);
      for (const k of chunks)
        await write(
          c,
          `INSERT INTO pipe_big VALUES ${k.map(() => '(?, ?)').join(', ')}`,
          k.flatMap((r) => [r.id, r.v]),
        );
      expect(() => chunkRows(c, [{ v: 'x'.repeat(8 * MiB) }], (r) => [r.v])).toThrow(StatementTooLarge);
    });
    const h = sha(rows[0]!.v);
    expect(await big()).toEqual(rows.map((r) => [r.id, h]));
  });
});
