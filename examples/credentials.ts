// The examples' configuration: the credentials file that `npm start` / `orbit-admin bootstrap
// --worker-access --output FILE` writes, overridden by ORBIT_URL / ORBIT_TOKEN. A problem is one
// clear line (ExampleFailure), never a stack trace.
import fs from 'node:fs';
import path from 'node:path';

export class ExampleFailure extends Error {}

export function fail(msg: string): never {
  throw new ExampleFailure(msg);
}

export function readCredentials(): { url: string; token: string } {
  const file = path.resolve(process.env.ORBIT_CREDENTIALS_FILE ?? path.join(process.env.ORBIT_HOME ?? '.orbit', 'dev.credentials.json'));
  let creds: { url?: string; token?: string };
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
  return { url, token };
}
