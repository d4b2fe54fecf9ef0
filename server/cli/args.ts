/** Minimal `--flag value` / `--switch` parser for the CLIs; repeated flags accumulate. When
 * `allowed` is given, any other flag is an error (a typo never silently does nothing). */
export function parseArgs(
  argv: string[],
  switches: string[],
  allowed?: string[],
): { positional: string[]; flags: Map<string, string[]> } {
  const positional: string[] = [];
  const flags = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (allowed && !allowed.includes(name) && !switches.includes(name)) {
      const known = [...switches, ...allowed].map((f) => `--${f}`).join(' ');
      throw new Error(`unknown option --${name} (known: ${known})`);
    }
    let value: string;
    if (eq > 0) value = a.slice(eq + 1);
    else if (switches.includes(name)) value = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new Error(`--${name} needs a value`);
      value = next;
      i++;
    }
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { positional, flags };
}

/** Like parseArgs, but positional arguments are an error too. */
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

/** One line for any error: its message (or code), whitespace collapsed. */
export function oneLine(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown };
  const msg = typeof e?.message === 'string' && e.message.trim() !== '' ? e.message : typeof e?.code === 'string' ? e.code : String(err);
  return msg.replace(/\s+/g, ' ').trim();
}

/** Runs a CLI main: errors print one line (`prog: message`) on stderr and exit 1. */
export function runMain(prog: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (err: unknown) => {
      process.stderr.write(`${prog}: ${oneLine(err)}\n`);
      process.exit(1);
    },
  );
}
