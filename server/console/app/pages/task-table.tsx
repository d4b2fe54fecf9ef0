// The task summary table used by the Tasks, Queue and Resource key pages.
import type { Task } from '../../../../protocol/http-views.js';
import { Badge, Id, KeyLink, Table, Time } from '../ui.js';

export function TaskTable({ tasks, queueNames, empty }: { tasks: Task[]; queueNames?: Map<string, string>; empty?: string }) {
  return (
    <Table
      rows={tasks}
      rowKey={(t) => t.id}
      empty={empty ?? 'No tasks.'}
      cols={[
        { label: 'task', cell: (t) => <Id id={t.id} page="task" data-task={t.id} /> },
        { label: 'state', cell: (t) => <Badge state={t.state} /> },
        { label: 'handler', cell: (t) => `${t.handler}@${t.handler_version}` },
        { label: 'queue', cell: (t) => queueNames?.get(t.queue_id) ?? <Id id={t.queue_id} /> },
        { label: 'concurrency key', cell: (t) => <KeyLink k={t.concurrency_key} /> },
        { label: 'business key', cell: (t) => t.business_key ?? <span class="muted">—</span> },
        { label: 'attempts', class: 'num', cell: (t) => `${t.attempts_made} / ${t.max_attempts}` },
        { label: 'created', cell: (t) => <Time iso={t.created_at} /> },
        { label: 'updated', cell: (t) => <Time iso={t.updated_at} /> },
      ]}
    />
  );
}
