package client_test

import (
	"testing"
	"time"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

func TestScheduleLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := ctxOf(t)
	q := e.newQueue(t)
	v1 := client.ScheduleVersionInput{
		Calendar: client.ScheduleCalendar{Cron: "0 3 * * *", Timezone: "Europe/Berlin"},
		Task: client.ScheduleTask{QueueID: q.ID, Handler: "index.rebuild", HandlerVersion: "v1", PayloadVersion: "v1",
			Payload: []byte(`{"scope":"all"}`), ConcurrencyKey: "index/" + e.id},
		Catchup: "none",
	}
	created, err := e.c.CreateSchedule(ctx, e.key("create"), client.CreateScheduleRequest{Name: e.name("s"), Version: v1})
	if err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	s := created.Schedule
	ver := created.Version
	if s.Paused || s.CurrentVersion != 1 || s.NextFireAt == nil || ver == nil || ver.Number != 1 ||
		ver.Overlap != "allow" || ver.Catchup != "none" || ver.Task.Priority != 0 || ver.Task.MaxAttempts != 3 || ver.Task.DeadlineSeconds != 86400 {
		t.Fatalf("created: %+v version %+v", s, ver)
	}
	bad := v1
	bad.Calendar = client.ScheduleCalendar{Cron: "not a cron"}
	_, err = e.c.CreateSchedule(ctx, e.key("bad"), client.CreateScheduleRequest{Name: e.name("bad"), Version: bad})
	wantCode(t, err, client.CodeInvalidArgument)

	// An enabled schedule keeps its queue from being retired.
	_, err = e.c.RetireQueue(ctx, q.ID, e.key("retire-queue-early"), client.RetireResourceRequest{ExpectedRevision: q.Revision, Reason: "early"})
	wantCode(t, err, client.CodeResourceBusy)

	v2 := v1
	v2.Calendar = client.ScheduleCalendar{EverySeconds: 3600}
	published, err := e.c.PublishScheduleVersion(ctx, s.ID, e.key("publish"), s.Revision, v2)
	if err != nil || published.Schedule.CurrentVersion != 2 || published.Version.Calendar.EverySeconds != 3600 {
		t.Fatalf("PublishScheduleVersion: %+v %v", published, err)
	}
	versions, err := e.c.ListScheduleVersions(ctx, s.ID)
	if err != nil || len(versions) != 2 || versions[0].Calendar.Cron != "0 3 * * *" {
		t.Fatalf("ListScheduleVersions: %+v %v", versions, err)
	}
	if v, err := e.c.GetScheduleVersion(ctx, s.ID, 2); err != nil || v.Number != 2 {
		t.Fatalf("GetScheduleVersion: %+v %v", v, err)
	}

	// A trigger creates one task from the current version; its key dedupes it.
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	trig, err := e.c.TriggerSchedule(ctx, s.ID, e.key("trigger"), at)
	if err != nil || trig.Task.ScheduleID != s.ID || trig.Task.ScheduleVersion != 2 || trig.Task.ScheduledFor == nil ||
		!trig.Task.ScheduledFor.Equal(at) || trig.Task.ConcurrencyKey != v1.Task.ConcurrencyKey {
		t.Fatalf("TriggerSchedule: %+v %v", trig, err)
	}
	again, err := e.c.TriggerSchedule(ctx, s.ID, e.key("trigger"), at)
	if err != nil || !again.Deduplicated || again.Task.ID != trig.Task.ID {
		t.Fatalf("trigger replay: %+v %v", again, err)
	}

	_, err = e.c.RetireSchedule(ctx, s.ID, e.key("retire-unpaused"), client.RetireResourceRequest{ExpectedRevision: published.Schedule.Revision, Reason: "x"})
	wantCode(t, err, client.CodeStateConflict) // only a paused schedule is retired
	paused, err := e.c.PauseSchedule(ctx, s.ID, e.key("pause"), published.Schedule.Revision)
	if err != nil || !paused.Schedule.Paused || paused.Schedule.NextFireAt != nil {
		t.Fatalf("PauseSchedule: %+v %v", paused, err)
	}
	retired, err := e.c.RetireSchedule(ctx, s.ID, e.key("retire"),
		client.RetireResourceRequest{ExpectedRevision: paused.Schedule.Revision, Reason: "go client test"})
	if err != nil || retired.Schedule.RetiredAt == nil {
		t.Fatalf("RetireSchedule: %+v %v", retired, err)
	}
	got, err := e.c.GetSchedule(ctx, s.ID)
	if err != nil || got.RetiredAt == nil {
		t.Fatalf("GetSchedule: %+v %v", got, err)
	}
	list, err := e.c.ListSchedules(ctx, client.Page{Limit: 500})
	if err != nil || len(list.Schedules) == 0 {
		t.Fatalf("ListSchedules: %+v %v", list, err)
	}
	if _, err := e.c.ListScheduleFires(ctx, s.ID, client.Page{}); err != nil {
		t.Fatalf("ListScheduleFires: %v", err)
	}
	if _, err := e.c.CancelTask(ctx, trig.Task.ID, e.key("cancel"), ""); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
}
