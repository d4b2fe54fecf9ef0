import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Credential } from '../db/credentials.js';
import type { AppContext } from '../app-context.js';

export interface RequestCtx {
  app: AppContext;
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  url: URL;
  params: Record<string, string>;
  /** Set by the router for every route that needs a credential. */
  cred: Credential;
  log: Logger;
}

export interface Reply {
  status: number;
  data: unknown;
}
