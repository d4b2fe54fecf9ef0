// The AsyncAPI document of the worker protocol, from the frame schemas the gateway and the SDK
// validate with, so that it cannot drift from them.
import { GATEWAY_FRAMES, SUBPROTOCOL, WORKER_FRAMES } from '@orbit/protocol/frames';
import { API_VERSION, plainSchema } from './openapi.js';
import { FRAME_DOCS } from './frame-docs.js';

export function asyncApiDocument(): Record<string, unknown> {
  const messages: Record<string, unknown> = {};
  const channelMessages: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  // From the gateway's side: it receives the worker's frames and sends its own.
  const sides = [
    ['receive', WORKER_FRAMES, 'worker → gateway'],
    ['send', GATEWAY_FRAMES, 'gateway → worker'],
  ] as const;
  for (const [action, table, direction] of sides) {
    for (const [type, schema] of Object.entries(table)) {
      const description = FRAME_DOCS[type as keyof typeof FRAME_DOCS];
      messages[type] = { name: type, title: `${type} (${direction})`, description, contentType: 'application/json', payload: plainSchema(schema) };
      channelMessages[type] = { $ref: `#/components/messages/${type}` };
      operations[`${action}-${type.replace(/\./g, '-')}`] = {
        action,
        channel: { $ref: '#/channels/workers' },
        summary: `${direction}: ${type}`,
        description: `${action === 'receive' ? 'The gateway receives' : 'The gateway sends'} \`${type}\`. ${description}`,
        messages: [{ $ref: `#/channels/workers/messages/${type}` }],
      };
    }
  }
  return {
    asyncapi: '3.1.0',
    info: {
      title: 'Orbit worker protocol',
      version: API_VERSION,
      description: `One WebSocket per worker session, subprotocol \`${SUBPROTOCOL}\`, text frames of JSON. \`hello\` first; \`task.assign\` carries work; \`start\` before the handler runs, \`renew\` while it runs, \`result\` once. Error codes and close codes: docs/errors.md.`,
    },
    servers: {
      gateway: {
        host: '127.0.0.1:8080',
        protocol: 'ws',
        pathname: '/v1/workers/connect',
        description: 'every gateway node; npm start listens on 127.0.0.1:8080',
        security: [{ $ref: '#/components/securitySchemes/bearer' }],
      },
    },
    defaultContentType: 'application/json',
    channels: {
      workers: {
        address: '/v1/workers/connect',
        title: 'worker session',
        messages: channelMessages,
        bindings: {
          ws: {
            bindingVersion: '0.1.0',
            headers: {
              type: 'object',
              required: ['Authorization', 'Sec-WebSocket-Protocol'],
              properties: {
                Authorization: { type: 'string', description: 'Bearer <token> with workers:connect and workers:consume' },
                'Sec-WebSocket-Protocol': { type: 'string', const: SUBPROTOCOL },
              },
            },
          },
        },
      },
    },
    operations,
    components: {
      messages,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a credential token with workers:connect and workers:consume' } },
    },
  };
}
