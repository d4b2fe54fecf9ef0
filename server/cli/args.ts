import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseNodeArgs } from 'node:util';

/** Repeated flags accumulate. Any other flag is an error: a typo never silently does nothing. */
export function parseArgs(argv: string[], switches: string[], allowed: string[]): { positional: string[]; flags: Map<string, string[]> } {
  const options = Object.fromEntries([
    ...switches.map((name) => [name, { type: 'boolean', multiple: true }] as const),
    ...allowed.map((name) => [name, { type: 'string', multiple: true }] as const),
  ]);
  try {
    const { values, positionals } = parseNodeArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { positional: positionals, flags: new Map(Object.entries(values).map(([name, v]) => [name, (v as (string | boolean)[]).map(String)])) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw err;
    throw new Error(`${(err as Error).message.split('.')[0]} (known: ${[...switches, ...allowed].map((f) => `--${f}`).join(' ')})`);
  }
}

export function parseFlags(argv: string[], switches: string[], allowed: string[]): Map<string, string[]> {
  const { positional, flags } = parseArgs(argv, switches, allowed);
  if (positional.length > 0) throw new Error(`unexpected argument ${JSON.stringify(positional[0])}`);
  return flags;
}

export function one(flags: Map<string, string[]>, name: string, required = true): string | undefined {
  const v = flags.get(name);
  if (!v || v.length === 0) {
    if (required) throw new Error(`--${name} is required`);
    return undefined;
  }
  if (v.length > 1) throw new Error(`--${name} given more than once`);
  return v[0];
}

export function oneLine(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown };
  const msg = typeof e?.message === 'string' && e.message.trim() !== '' ? e.message : typeof e?.code === 'string' ? e.code : String(err);
  return msg.replace(/\s+/g, ' ').trim();
}

/** A test calling a CLI's main() in-process passes collectors instead of the process's streams. */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
}

/** Resolves with the exit code. */
export type CliMain = (argv: string[], env?: NodeJS.ProcessEnv, io?: CliIo) => Promise<number>;

/** Any error becomes one line on stderr and exit code 1. */
export async function runCli(prog: string, io: CliIo, body: () => Promise<number | void>): Promise<number> {
  try {
    return (await body()) ?? 0;
  } catch (err) {
    io.stderr.write(`${prog}: ${oneLine(err)}\n`);
    return 1;
  }
}

/** Run as a script, also through an npm bin link (a symlink) or named without its .js. Imported by
 * a test that calls main() itself, it does nothing. */
export function runIfScript(moduleUrl: string, main: CliMain): void {
  const script = process.argv[1];
  const self = fileURLToPath(moduleUrl);
  if (!script || ![script, `${script}.js`].some((p) => fs.existsSync(p) && fs.realpathSync(p) === self)) return;
  void main(process.argv.slice(2), process.env, process).then((code) => process.exit(code));
}
