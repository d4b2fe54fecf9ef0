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
  cred: Credential;
  /** false: `cred` came from the node's credential cache and the route must have its liveness
   * checked by the database before it answers. */
  credentialChecked?: boolean;
  log: Logger;
}

export interface Reply {
  status: number;
  data: unknown;
  /** `data` already serialized, sent as it is. */
  json?: string;
}
