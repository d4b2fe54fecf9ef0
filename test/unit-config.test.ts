// Configuration parsing (server/config.ts), without a database or a process: defaults, every
// number variable refusing non-numbers and out-of-range values with a line naming it, the flag,
// the listen address, the DSN, the CLI helpers; and the documentation check — every variable the
// server reads is read in config.ts only and is listed in docs/operations.md with the default it has.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BATCH_BODY_BYTES, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_FRAME_BYTES } from '../protocol/limits.js';
import os from 'node:os';
import { configuredDsn, ENV_VARS, gatewayUrl, loadConfig, MAX_PROCESSES, orbitHome, processEnv, type Config } from '../server/config.js';
import { parseDsn } from '../server/db/pool.js';
import { packageRoot } from '../server/paths.js';

const DSN = 'mysql://u:p@127.0.0.1:3306/d';

/** The message `fn` throws (the test fails when it does not throw). */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('did not throw');
}
const env = { ORBIT_MYSQL_DSN: DSN };

/** Every integer variable: its Config field, default, range. */
const INTS: [string, keyof Config, number, number, number][] = [
  ['ORBIT_MAX_BODY_BYTES', 'maxBodyBytes', DEFAULT_MAX_BODY_BYTES, 300 * 1024, 64 * 1024 * 1024],
  ['ORBIT_MAX_BATCH_BODY_BYTES', 'maxBatchBodyBytes', DEFAULT_MAX_BATCH_BODY_BYTES, 300 * 1024, 256 * 1024 * 1024],
  ['ORBIT_MAX_FRAME_BYTES', 'maxFrameBytes', DEFAULT_MAX_FRAME_BYTES, 300 * 1024, 64 * 1024 * 1024],
  ['ORBIT_SWEEP_INTERVAL_MS', 'sweepIntervalMs', 500, 50, 1000],
  ['ORBIT_HELLO_TIMEOUT_MS', 'helloTimeoutMs', 10_000, 100, 600_000],
  ['ORBIT_PING_INTERVAL_MS', 'pingIntervalMs', 15_000, 100, 600_000],
  ['ORBIT_PONG_TIMEOUT_MS', 'pongTimeoutMs', 1_000, 50, 60_000],
  ['ORBIT_EVENT_RETENTION_SECONDS', 'eventRetentionSeconds', 604_800, 60, 31_536_000],
  ['ORBIT_SESSION_MAX_FRAMES_IN_FLIGHT', 'sessionMaxFramesInFlight', 64, 1, 65_536],
  ['ORBIT_SESSION_MAX_BYTES_IN_FLIGHT', 'sessionMaxBytesInFlight', 16 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024],
  ['ORBIT_SESSION_TX_SLOTS', 'sessionTxSlots', 8, 1, 1024],
  ['ORBIT_SESSION_TX_SLOTS_PER_APPLICATION', 'sessionTxSlotsPerApplication', 4, 1, 1024],
];

describe('loadConfig', () => {
  it('applies the defaults', () => {
    const c = loadConfig(env);
    expect(c).toMatchObject({ mysqlDsn: DSN, httpHost: '127.0.0.1', httpPort: 8080, logLevel: 'info' });
    for (const [, field, def] of INTS) expect(c[field], field).toBe(def);
    expect(c.nodeId).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  });

  it.each(INTS)('%s: an integer in range is taken, empty is the default, the bounds are inclusive', (name, field, def, min, max) => {
    expect(loadConfig({ ...env, [name]: String(min) })[field]).toBe(min);
    expect(loadConfig({ ...env, [name]: String(max) })[field]).toBe(max);
    expect(loadConfig({ ...env, [name]: '' })[field]).toBe(def);
    expect(() => loadConfig({ ...env, [name]: String(min - 1) })).toThrow(new RegExp(`^${name} must be an integer in ${min}\\.\\.${max}, got "${min - 1}"$`));
    expect(() => loadConfig({ ...env, [name]: String(max + 1) })).toThrow(new RegExp(`^${name} must be an integer in`));
  });

  it.each(INTS)('%s: anything but plain decimal digits stops the start, never NaN', (name, _field, _def, min, max) => {
    for (const bad of ['soon', 'NaN', 'Infinity', '1e3', '0x400', '12.5', ' 600', '600 ', '+600', '1_000', '99999999999999999999']) {
      expect(
        errorOf(() => loadConfig({ ...env, [name]: bad })),
        bad,
      ).toBe(`${name} must be an integer in ${min}..${max}, got ${JSON.stringify(bad)}`);
    }
  });

  it('ORBIT_HTTP_ADDR: host:port, [IPv6]:port, :port; anything else names the variable', () => {
    expect(loadConfig({ ...env, ORBIT_HTTP_ADDR: '0.0.0.0:9000' })).toMatchObject({ httpHost: '0.0.0.0', httpPort: 9000 });
    expect(loadConfig({ ...env, ORBIT_HTTP_ADDR: '[::1]:0' })).toMatchObject({ httpHost: '::1', httpPort: 0 });
    expect(loadConfig({ ...env, ORBIT_HTTP_ADDR: ':8081' })).toMatchObject({ httpHost: '127.0.0.1', httpPort: 8081 });
    for (const bad of ['', 'localhost', '127.0.0.1:65536', '127.0.0.1:http', 'local host:80', '[nope]:80']) {
      expect(() => loadConfig({ ...env, ORBIT_HTTP_ADDR: bad }), bad).toThrow(/^ORBIT_HTTP_ADDR /);
    }
  });

  it('ORBIT_LOG_LEVEL and ORBIT_NODE_ID are checked (empty is refused, not defaulted)', () => {
    expect(loadConfig({ ...env, ORBIT_LOG_LEVEL: 'debug', ORBIT_NODE_ID: 'node-a' })).toMatchObject({ logLevel: 'debug', nodeId: 'node-a' });
    for (const bad of ['', 'verbose'])
      expect(() => loadConfig({ ...env, ORBIT_LOG_LEVEL: bad })).toThrow(/^ORBIT_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got/);
    for (const bad of ['', 'node one', 'x'.repeat(129)]) expect(() => loadConfig({ ...env, ORBIT_NODE_ID: bad })).toThrow(/^ORBIT_NODE_ID must be/);
  });

  it('ORBIT_PROCESSES: 1 by default, an integer in 1..64 or auto (the usable cores); anything else names the variable', () => {
    expect(loadConfig(env).processes).toBe(1);
    expect(loadConfig({ ...env, ORBIT_PROCESSES: '' }).processes).toBe(1);
    expect(loadConfig({ ...env, ORBIT_PROCESSES: '1' }).processes).toBe(1);
    expect(loadConfig({ ...env, ORBIT_PROCESSES: String(MAX_PROCESSES) }).processes).toBe(64);
    expect(loadConfig({ ...env, ORBIT_PROCESSES: 'auto' }).processes).toBe(Math.min(64, os.availableParallelism()));
    for (const bad of ['0', '65', '-1', 'two', 'AUTO', '1.5', ' 2', '2 ', '1e1', '0x2', '007x'])
      expect(
        errorOf(() => loadConfig({ ...env, ORBIT_PROCESSES: bad })),
        bad,
      ).toBe(`ORBIT_PROCESSES must be auto or an integer in 1..64, got ${JSON.stringify(bad)}`);
  });

  it("ORBIT_PROCESSES > 1: each process's environment; a set ORBIT_NODE_ID names them <id>-<n> and must leave room for it", () => {
    const c = loadConfig({ ...env, ORBIT_PROCESSES: '3', ORBIT_NODE_ID: 'edge-a', ORBIT_HTTP_ADDR: '[::1]:0' });
    expect(processEnv(c, 2)).toEqual({ ORBIT_MYSQL_DSN: DSN, ORBIT_HTTP_ADDR: '[::1]:0', ORBIT_PROCESSES: '1', ORBIT_NODE_ID: 'edge-a-2' });
    // Unset: each process generates its own id, as a single node does.
    expect(processEnv(loadConfig({ ...env, ORBIT_PROCESSES: '2' }), 1)).toEqual({
      ORBIT_MYSQL_DSN: DSN,
      ORBIT_HTTP_ADDR: '127.0.0.1:8080',
      ORBIT_PROCESSES: '1',
    });
    // The embedded database's DSN (npm start) reaches the processes.
    expect(processEnv(loadConfig({ ORBIT_PROCESSES: '2' }, { mysqlDsn: 'mysql://o:p@127.0.0.1:1/e' }), 1).ORBIT_MYSQL_DSN).toBe('mysql://o:p@127.0.0.1:1/e');
    expect(loadConfig({ ...env, ORBIT_NODE_ID: 'x'.repeat(128) }).nodeId).toHaveLength(128);
    expect(loadConfig({ ...env, ORBIT_PROCESSES: '9', ORBIT_NODE_ID: 'x'.repeat(126) }).processes).toBe(9);
    expect(() => loadConfig({ ...env, ORBIT_PROCESSES: '10', ORBIT_NODE_ID: 'x'.repeat(126) })).toThrow(
      /^ORBIT_NODE_ID must leave room for the process suffix "-10"/,
    );
  });

  it('ORBIT_MYSQL_DSN: required (unless overridden), checked, connectionLimit a number', () => {
    expect(() => loadConfig({})).toThrow(/^ORBIT_MYSQL_DSN is not set/);
    expect(() => loadConfig({ ORBIT_MYSQL_DSN: '' })).toThrow(/^ORBIT_MYSQL_DSN is not set/);
    expect(loadConfig({}, { mysqlDsn: DSN }).mysqlDsn).toBe(DSN);
    expect(loadConfig(env, { mysqlDsn: 'mysql://o:p@127.0.0.1:1/other' }).mysqlDsn).toBe('mysql://o:p@127.0.0.1:1/other');
    for (const bad of ['garbage', 'postgres://u:p@h:5432/db', 'mysql://u:p@127.0.0.1:3306/'])
      expect(() => loadConfig({ ORBIT_MYSQL_DSN: bad })).toThrow(/ORBIT_MYSQL_DSN/);
    expect(parseDsn(`${DSN}?connectionLimit=4`).connectionLimit).toBe(4);
    for (const bad of ['', 'four', '0', '4.5', '1e2']) {
      expect(() => loadConfig({ ORBIT_MYSQL_DSN: `${DSN}?connectionLimit=${bad}` }), bad).toThrow(/^ORBIT_MYSQL_DSN connectionLimit must be an integer/);
    }
  });
});

describe('CLI variables', () => {
  it('configuredDsn: unset or empty → undefined (embedded database); set → checked', () => {
    expect(configuredDsn({})).toBeUndefined();
    expect(configuredDsn({ ORBIT_MYSQL_DSN: '' })).toBeUndefined();
    expect(configuredDsn(env)).toBe(DSN);
    expect(() => configuredDsn({ ORBIT_MYSQL_DSN: 'garbage' })).toThrow(/ORBIT_MYSQL_DSN/);
  });

  it('orbitHome: ORBIT_HOME as an absolute path, .orbit by default', () => {
    expect(orbitHome({})).toBe(path.resolve('.orbit'));
    expect(orbitHome({ ORBIT_HOME: '' })).toBe(path.resolve('.orbit'));
    expect(orbitHome({ ORBIT_HOME: '/srv/orbit' })).toBe('/srv/orbit');
    expect(orbitHome({ ORBIT_HOME: 'rel/dir' })).toBe(path.resolve('rel/dir'));
  });

  it('gatewayUrl: ORBIT_URL, else http:// + ORBIT_HTTP_ADDR; a non-http URL is refused', () => {
    expect(gatewayUrl({})).toBe('http://127.0.0.1:8080');
    expect(gatewayUrl({ ORBIT_HTTP_ADDR: '10.0.0.5:9000' })).toBe('http://10.0.0.5:9000');
    expect(gatewayUrl({ ORBIT_URL: 'https://orbit.example.com', ORBIT_HTTP_ADDR: '10.0.0.5:9000' })).toBe('https://orbit.example.com');
    for (const bad of ['orbit.example.com', 'ftp://orbit.example.com', 'http//x'])
      expect(() => gatewayUrl({ ORBIT_URL: bad }), bad).toThrow(/^ORBIT_URL must be an http:\/\/ or https:\/\/ URL/);
  });
});

// ---- documentation ------------------------------------------------------------------------------

const root = packageRoot();

function sources(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => path.join(dir, f));
}

/** docs/operations.md's Configuration section. */
function docsSection(): string {
  const text = fs.readFileSync(path.join(root, 'docs/operations.md'), 'utf8');
  return text.slice(text.indexOf('## Configuration'), text.indexOf('## Command-line tools'));
}

/** `| \`NAME\` | default | meaning |` rows of the section (both tables): name → default. */
function docsRows(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const m of docsSection().matchAll(/^\|\s*`(ORBIT_[A-Z0-9_]+)`\s*\|\s*([^|]*?)\s*\|/gm)) rows.set(m[1]!, m[2]!);
  return rows;
}

/** Names of ORBIT_ variables a source reads from an environment object. */
function envReads(text: string): string[] {
  const re = /\benv(?:\.|\[['"]|\s*,\s*['"])(ORBIT_[A-Z0-9_]+)|process\.env\.(ORBIT_[A-Z0-9_]+)|env(?:Int)?\(\s*['"](ORBIT_[A-Z0-9_]+)/g;
  return [...text.matchAll(re)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

describe('configuration documentation', () => {
  const rows = docsRows();

  it('docs/operations.md lists every variable config.ts reads, with the default it applies', () => {
    const c = loadConfig(env);
    for (const name of ENV_VARS) expect(rows.has(name), `${name} missing from docs/operations.md's configuration table`).toBe(true);
    for (const [name, field, def] of INTS) {
      expect(Number(rows.get(name)), `${name}'s documented default`).toBe(def);
      expect(c[field]).toBe(def);
    }
    expect(rows.get('ORBIT_HTTP_ADDR')).toBe(`\`${c.httpHost}:${c.httpPort}\``);
    expect(rows.get('ORBIT_LOG_LEVEL')).toBe(`\`${c.logLevel}\``);
    expect(rows.get('ORBIT_HOME')).toBe('`.orbit`');
    expect(rows.get('ORBIT_PROCESSES')).toBe(String(c.processes));
  });

  it('no server file but config.ts reads an ORBIT_ variable, and config.ts reads only the listed ones', () => {
    const listed = new Set<string>(ENV_VARS);
    const config = fs.readFileSync(path.join(root, 'server/config.ts'), 'utf8');
    const readInConfig = [...config.matchAll(/['"`.](ORBIT_[A-Z0-9_]+)\b/g)].map((m) => m[1]!);
    expect(readInConfig.length).toBeGreaterThan(ENV_VARS.length);
    for (const name of readInConfig) expect(listed.has(name), `${name} is used in config.ts but not in ENV_VARS`).toBe(true);
    // The console (server/console/app) runs in a browser: the ORBIT_ names there are shell and SDK
    // snippets it shows, not reads.
    const outside = sources('server')
      .filter((f) => f !== path.join('server', 'config.ts') && !f.startsWith(path.join('server', 'console', 'app')))
      .flatMap((f) => envReads(fs.readFileSync(path.join(root, f), 'utf8')).map((name) => `${f}: ${name}`));
    expect(outside).toEqual([]);
  });

  it('docs/operations.md names every variable the test suite reads (test-only ones in their own table)', () => {
    const section = docsSection();
    const read = new Set(sources('test').flatMap((f) => envReads(fs.readFileSync(path.join(root, f), 'utf8'))));
    for (const name of ['ORBIT_FUZZ_SEED', 'ORBIT_FUZZ_RUNS', 'ORBIT_CHROMIUM', 'ORBIT_CONSOLE_SCREENSHOTS']) {
      expect(read.has(name), `the scan finds ${name}`).toBe(true);
      expect(rows.has(name), `${name} has a row`).toBe(true);
    }
    // The rest are the examples' variables (an SDK worker the tests run), named in the section's text.
    for (const name of read)
      expect(section.includes(`\`${name}\``), `${name} (read by the tests) missing from docs/operations.md's configuration section`).toBe(true);
  });
});
