/** Minimal `--flag value` / `--switch` parser for the CLIs; repeated flags accumulate. */
export function parseArgs(argv: string[], switches: string[]): { positional: string[]; flags: Map<string, string[]> } {
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

export function one(flags: Map<string, string[]>, name: string, required = true): string | undefined {
  const v = flags.get(name);
  if (!v || v.length === 0) {
    if (required) throw new Error(`--${name} is required`);
    return undefined;
  }
  if (v.length > 1) throw new Error(`--${name} given more than once`);
  return v[0];
}

/** Runs a CLI main: errors print one line and exit 1. */
export function runMain(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
