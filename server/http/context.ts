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
  /** false: `cred` came from the node's credential cache and the route (`checksCredential`) must
   * have its liveness checked by the database before it answers; the router re-checks it before
   * any error is answered, so that a revoked token still gets 401 first. */
  credentialChecked?: boolean;
  log: Logger;
}

export interface Reply {
  status: number;
  data: unknown;
  /** `data` already serialized (JSON.stringify(data)), sent as it is (http/envelope.ts sendData). */
  json?: string;
}
