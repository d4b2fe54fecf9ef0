// Application access. Nothing here ever falls back to another queue than the one explicitly
// selected: with no valid selection the snippets are not shown.
import { useState } from 'preact/hooks';
import type { Queue, Subscription } from '../../../../protocol/http-views.js';
import { LifecycleActions } from '../actions.js';
import { enc } from '../api.js';
import { useGet } from '../hooks.js';
import { href } from '../router.js';
import { lacking, type SessionInfo } from '../session.js';
import { Badge, Copy, ErrorBox, Fields, lifecycle, Section, Select } from '../ui.js';
import { SlotMeter } from './subscriptions.js';

function curlSnippet(origin: string, queueId: string): string {
  return [
    `export ORBIT_URL=${origin}`,
    `export ORBIT_TOKEN=…   # a credential with tasks:submit; never commit it`,
    `curl "$ORBIT_URL/v1/tasks" -H "Authorization: Bearer $ORBIT_TOKEN" \\`,
    `  -H 'Content-Type: application/json' -H 'Idempotency-Key: my-operation-001' \\`,
    `  --data '{"queue_id":"${queueId}","handler":"object.update","handler_version":"v1","payload_version":"v1","payload":{"object_ref":"objects/42"}}'`,
  ].join('\n');
}

function workerSnippet(origin: string, queueId: string): string {
  return [
    `import { createWorker } from './worker-sdk/index.js';`,
    ``,
    `const worker = createWorker({`,
    `  url: '${origin}',`,
    `  token: process.env.ORBIT_TOKEN!,   // workers:connect + workers:consume`,
    `  queues: ['${queueId}'],`,
    `  capacity: 4,`,
    `  handlers: {`,
    `    'object.update': async (e) => ({ ok: true, token: String(e.concurrencyToken ?? '') }),`,
    `  },`,
    `});`,
    `process.on('SIGINT', () => void worker.close());`,
  ].join('\n');
}

export function AccessPage({ session }: { session: SessionInfo }) {
  const queues = useGet<{ queues: Queue[] }>(session.scopes.has('queues:manage') ? '/v1/queues' : null);
  const subs = useGet<{ subscriptions: Subscription[] }>(session.scopes.has('events:read') ? '/v1/subscriptions' : null);
  // The choice is remembered per namespace; a remembered id that is no longer listed is ignored.
  const memory = session.namespaceId && `orbit.console.queue.${session.namespaceId}`;
  const [selected, setSelected] = useState<string | null>(() => (memory ? localStorage.getItem(memory) : null));
  const list = queues.data?.queues ?? session.queues;
  // Only an explicit choice counts; with exactly one queue that queue is the only possible choice.
  const queue = list.find((q) => q.id === selected) ?? (list.length === 1 ? list[0] : undefined);
  const select = (id: string) => {
    setSelected(id);
    if (id && memory) localStorage.setItem(memory, id);
  };
  return (
    <>
      <Section title="Application access">
        <Fields
          items={[
            ['namespace', <code>{session.namespaceId ?? 'unknown'}</code>],
            ['gateway', <code>{location.origin}</code>],
          ]}
        />
        <ErrorBox error={queues.error} />
        <label class="select-queue">
          Queue
          <Select
            name="access_queue"
            value={queue?.id ?? ''}
            set={select}
            any="— select a queue —"
            options={list.map((q) => [q.id, q.name + (q.retired_at ? ' (retired)' : q.paused ? ' (paused)' : '')] as const)}
          />
        </label>
        {selected && !queue && <p class="notice">The queue selected earlier is not available to this credential any more; select one.</p>}
      </Section>
      {queue ? (
        <>
          <Section title={`Queue ${queue.name}`} actions={<Badge state={lifecycle(queue)} />}>
            <Fields
              items={[
                ['queue id', <code data-selected-queue>{queue.id}</code>],
                ['details', <a href={href('queues', queue.id)}>Queue page →</a>],
              ]}
            />
            {queue.retired_at && <p class="notice">This queue is retired: submits and workers naming it are refused.</p>}
            {queue.paused && !queue.retired_at && <p class="notice">This queue is paused: it accepts tasks but dispatches none.</p>}
          </Section>
          <Section title="Producer (curl)" actions={<Copy text={curlSnippet(location.origin, queue.id)} />}>
            <pre class="snippet" data-snippet="curl">
              {curlSnippet(location.origin, queue.id)}
            </pre>
          </Section>
          <Section title="Worker (SDK)" actions={<Copy text={workerSnippet(location.origin, queue.id)} />}>
            <pre class="snippet" data-snippet="sdk">
              {workerSnippet(location.origin, queue.id)}
            </pre>
          </Section>
          <Section title="Retire the selected queue">
            <LifecycleActions base={`/v1/queues/${enc(queue.id)}`} noun="queue" resource={queue} why={lacking(session, 'queues:manage')} />
          </Section>
        </>
      ) : (
        <Section title="Snippets">
          <p class="muted">Select a queue to see the producer and worker configuration for it.</p>
        </Section>
      )}
      <Section title="Subscription slots">
        <ErrorBox error={subs.error} />
        {subs.data ? <SlotMeter subs={subs.data.subscriptions} /> : <p class="muted">Needs the events:read scope.</p>}
      </Section>
    </>
  );
}
