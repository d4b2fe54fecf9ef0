// The console tests drive Debian's Chromium, installed here once when missing (support/apt.ts).
import fs from 'node:fs';
import { aptInstall } from './apt.js';

export function ensureChromium(executable: string, log: (l: string) => void): void {
  if (fs.existsSync(executable) || process.env.ORBIT_CHROMIUM) return;
  aptInstall(['chromium'], 'the console tests need it', log);
}
