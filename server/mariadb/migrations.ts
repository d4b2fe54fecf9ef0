// Forward-only numbered migrations, serialized across nodes by a replicated lease row.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { Pool } from '../db/pool.js';
import { packageRoot } from '../paths.js';
import { takeMigrationLock } from './migration-lock.js';

export interface Migration {
  version: number;
  name: string;
  file: string;
  checksum: string;
}

const FILE_RE = /^(\d{6})_([a-z0-9_]+)\.sql$/;

export function listMigrations(dir = path.join(packageRoot(), 'migrations')): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => FILE_RE.test(f))
    .sort()
    .map((f) => {
      const m = FILE_RE.exec(f)!;
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      return { version: Number(m[1]), name: m[2]!, file: path.join(dir, f), checksum: crypto.createHash('sha256').update(text).digest('hex') };
    });
}

/** Splits on `;` at the end of a line, outside comments. */
export function splitStatements(sql: string): string[] {
  return sql
    .replace(/^[^\S\n]*--.*$/gm, '')
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter((s) => s.length > 0);
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INT UNSIGNED NOT NULL COMMENT 'migration number',
  name VARCHAR(128) NOT NULL COMMENT 'migration name from the file name',
  checksum CHAR(64) NOT NULL COMMENT 'SHA-256 of the file as applied',
  applied_at DATETIME(3) NOT NULL COMMENT 'time applied (UTC)',
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='applied schema migrations'`;

export async function migrateUp(pool: Pool, log: (l: string) => void = () => {}): Promise<number[]> {
  const applied: number[] = [];
  const lock = await takeMigrationLock(pool, 120);
  try {
    const conn = await pool.getConnection();
    try {
      await conn.query(CREATE_TABLE);
      const s = await schemaStatus(pool);
      if (s.unknown.length > 0) {
        throw new Error(`database schema is newer than this orbit (migrations ${s.unknown.join(', ')} unknown): upgrade orbit; nothing was applied`);
      }
      for (const m of s.known) {
        const prev = s.applied.get(m.version);
        if (prev !== undefined) {
          if (prev !== m.checksum) log(`migration ${m.version} (${m.name}) changed after it was applied; files are forward-only`);
          continue;
        }
        log(`applying migration ${String(m.version).padStart(6, '0')}_${m.name}`);
        // DDL commits implicitly in MySQL; a migration that fails halfway must be fixed forward.
        for (const stmt of splitStatements(fs.readFileSync(m.file, 'utf8'))) {
          lock.assertHeld();
          await conn.query(stmt);
        }
        const row = [m.version, m.name, m.checksum];
        await conn.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, UTC_TIMESTAMP(3))', row);
        applied.push(m.version);
      }
    } finally {
      conn.release();
    }
  } finally {
    await lock.release();
  }
  return applied;
}

/** The applied versions (with their checksums) against this orbit's migration files. */
export async function schemaStatus(pool: Pool) {
  let done = new Map<number, string>();
  try {
    const [rows] = await pool.query('SELECT version, checksum FROM schema_migrations ORDER BY version');
    done = new Map((rows as { version: number; checksum: string }[]).map((r) => [Number(r.version), r.checksum]));
  } catch (err) {
    if ((err as { errno?: number }).errno !== 1146) throw err;
  }
  const known = listMigrations();
  const knownSet = new Set(known.map((m) => m.version));
  return {
    applied: done,
    known,
    current: Math.max(0, ...done.keys()),
    expected: Math.max(0, ...knownSet),
    pending: known.filter((m) => !done.has(m.version)).map((m) => m.version),
    unknown: [...done.keys()].filter((v) => !knownSet.has(v)),
  };
}

export async function assertSchemaCurrent(pool: Pool): Promise<void> {
  const s = await schemaStatus(pool);
  if (s.unknown.length > 0) {
    throw new Error(`database schema is newer than this gateway (migrations ${s.unknown.join(', ')} unknown): upgrade orbit`);
  }
  if (s.pending.length > 0) {
    throw new Error(`database schema is older than this gateway (pending ${s.pending.join(', ')}): run \`orbit-migrate up\``);
  }
}
