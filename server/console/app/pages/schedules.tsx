// Schedules. A server without /v1/schedules gets a clear notice.
import type { Schedule, ScheduleFire, ScheduleVersion } from '../../../../protocol/http-views.js';
import { ActionStatus, LifecycleActions } from '../actions.js';
import { enc } from '../api.js';
import { useAction, useGet, usePage } from '../hooks.js';
import { href } from '../router.js';
import { Badge, Button, ErrorBox, Fields, lifecycle, Loading, PagerBar, Section, Table, Time } from '../ui.js';
import { DefinitionList, PublishVersion, Unavailable, VersionHistory, unavailable } from './versioned.js';

const UNAVAILABLE = <Unavailable what="Schedules" api="/v1/schedules" />;

export function ScheduleList() {
  const [list, pager] = usePage<{ schedules: Schedule[] }>('/v1/schedules');
  return (
    <DefinitionList
      title="Schedules"
      notice={UNAVAILABLE}
      error={list.error}
      page={list.data && { rows: list.data.schedules, next_cursor: list.data.next_cursor }}
      pager={pager}
      empty="No schedules."
      cols={[
        { label: 'name', cell: (s) => <a href={href('schedules', s.id)}>{s.name}</a> },
        { label: 'state', cell: (s) => <Badge state={lifecycle(s)} /> },
        { label: 'version', class: 'num', cell: (s) => s.current_version },
        { label: 'next fire', cell: (s) => <Time iso={s.next_fire_at} /> },
        { label: 'last fire', cell: (s) => <Time iso={s.last_fire_at} /> },
      ]}
    />
  );
}

/** The editable part of a version: what POST /v1/schedules/{id}/versions takes. */
function editable(v: ScheduleVersion): Omit<ScheduleVersion, 'number' | 'created_at'> {
  const { number: _n, created_at: _c, ...rest } = v;
  return rest;
}

export function ScheduleDetail({ id }: { id: string }) {
  const sch = useGet<{ schedule: Schedule }>(`/v1/schedules/${enc(id)}`);
  const versions = useGet<{ versions: ScheduleVersion[] }>(`/v1/schedules/${enc(id)}/versions`);
  const [fires, pager] = usePage<{ fires: ScheduleFire[] }>(`/v1/schedules/${enc(id)}/fires`);
  const trigger = useAction<Record<string, never>>(`/v1/schedules/${enc(id)}:trigger`);
  const s = sch.data?.schedule;
  if (unavailable(sch.error) && !s) return <Section title="Schedule">{UNAVAILABLE}</Section>;
  if (sch.error) return <ErrorBox error={sch.error} />;
  if (!s) return <Loading what="schedule" />;
  const all = versions.data?.versions ?? [];
  const current = all.find((v) => v.number === s.current_version);
  return (
    <>
      <Section title={`Schedule ${s.name}`} actions={<Badge state={lifecycle(s)} />}>
        <Fields
          items={[
            ['id', <code>{s.id}</code>],
            ['revision', s.revision],
            ['current version', String(s.current_version)],
            ['next fire', <Time iso={s.next_fire_at} />],
            ['last fire', <Time iso={s.last_fire_at} />],
            ['created', <Time iso={s.created_at} />],
            ['retired', s.retired_at ? <Time iso={s.retired_at} /> : null],
          ]}
        />
        <LifecycleActions base={`/v1/schedules/${enc(s.id)}`} noun="schedule" resource={s} />
        <div class="row">
          <Button disabled={trigger.busy || !!s.retired_at} onClick={() => void trigger.run({})} data-act="trigger">
            Trigger now
          </Button>
        </div>
        <ActionStatus action={trigger} body={{}} what="Trigger" />
      </Section>
      {current && (
        <PublishVersion
          path={`/v1/schedules/${enc(s.id)}/versions`}
          definition={s}
          initial={editable(current)}
          why={s.retired_at ? 'the schedule is retired' : undefined}
        />
      )}
      <VersionHistory versions={all} current={s.current_version} error={versions.error} body={editable} />
      <Section title="Fire history">
        <ErrorBox error={fires.error} />
        {fires.data && (
          <Table
            rows={fires.data.fires}
            rowKey={(f) => `${f.scheduled_for}-${f.fired_at}`}
            empty="No fires yet."
            cols={[
              { label: 'scheduled for', cell: (f) => <Time iso={f.scheduled_for} /> },
              { label: 'fired', cell: (f) => <Time iso={f.fired_at} /> },
              { label: 'version', class: 'num', cell: (f) => f.version },
              { label: 'outcome', cell: (f) => f.outcome },
              { label: 'task', cell: (f) => (f.task_id ? <a href={href('task', f.task_id)}>{f.task_id.slice(0, 8)}…</a> : '—') },
            ]}
          />
        )}
        <PagerBar pager={pager} nextCursor={fires.data?.next_cursor} />
      </Section>
    </>
  );
}
