// What the examples share: the credentials file that `npm start` / `orbit-admin bootstrap
// --worker-access --output FILE` writes, overridden by ORBIT_URL / ORBIT_TOKEN, and the way each
// example ends: a problem is one clear line (ExampleFailure), never a stack trace, within a deadline.
import fs from 'node:fs';
import path from 'node:path';

export class ExampleFailure extends Error {}

export function fail(msg: string): never {
  throw new ExampleFailure(msg);
}

/** The fields of a credentials file the examples read (all optional in the file). */
export interface CredentialsFields {
  url?: string;
  token?: string;
  namespace_id?: string;
  mysql_dsn?: string;
}

export function readCredentials(): { url: string; token: string; creds: CredentialsFields } {
  const file = path.resolve(process.env.ORBIT_CREDENTIALS_FILE ?? path.join(process.env.ORBIT_HOME ?? '.orbit', 'dev.credentials.json'));
  let creds: CredentialsFields;
  try {
    creds = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof creds;
  } catch (err) {
    fail(
      `cannot read ORBIT_CREDENTIALS_FILE ${file}: ${(err as Error).message} (run \`npm start\` or \`orbit-admin bootstrap --worker-access --output FILE\`)`,
    );
  }
  const url = process.env.ORBIT_URL ?? creds.url;
  const token = process.env.ORBIT_TOKEN ?? creds.token;
  if (!url) fail('ORBIT_URL is not set and the credentials file has no "url"');
  if (!token) fail('the credentials file has no "token" (and ORBIT_TOKEN is not set)');
  return { url, token, creds };
}

/** Runs an example's `main` under a deadline: exit 0 when it resolves (or its process.exitCode),
 * 1 with one line `<name>: <reason>` on stderr when it throws or the deadline passes. */
export function runMain(name: string, main: () => Promise<void>, deadlineMs = 20_000): void {
  const deadline = setTimeout(() => {
    console.error(`${name}: not finished within ${deadlineMs / 1000} s`);
    process.exit(1);
  }, deadlineMs);
  main().then(
    () => {
      clearTimeout(deadline);
      process.exit(process.exitCode ?? 0);
    },
    (err) => {
      clearTimeout(deadline);
      console.error(`${name}: ${err instanceof ExampleFailure ? err.message : ((err as Error).stack ?? String(err))}`);
      process.exit(1);
    },
  );
}
