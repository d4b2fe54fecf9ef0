# Reads a gateway's ORBIT_PHASE_TRACE file (server/phase-trace.ts, temporary) and prints the phases of
# the last N tasks submitted (the unkeyed-paced scenario of a bench run):
#   python3 bench/phase-trace-report.py FILE.PID N
# Phases on the gateway's clock (performance.now(), ms). The bench's submit→assign is task created_at
# (the submit transaction's first answer) → attempt leased_at (the assigning transaction's first
# answer): phases A–E below; F–G come after it (not in the bench's figure).
import json, sys, bisect
from collections import Counter
f = sys.argv[1]; last = int(sys.argv[2])
txs=[]; wakes=[]; rounds=[]; delivered={}; gcs=[]; eld=None
for line in open(f):
    line=line.strip()
    if not line: continue
    e=json.loads(line); k=e['k']
    if k=='tx': txs.append(e)
    elif k=='wake': wakes.append(e)
    elif k=='round': rounds.append(e['t'])
    elif k=='delivered':
        for tid in e['tasks']: delivered[tid]=e['t']
    elif k=='gc': gcs.append((e['t'], e['dur']))
    elif k=='eld': eld=e
wakes.sort(key=lambda e:e['t']); wt=[e['t'] for e in wakes]; rounds.sort()
sub={}; asg={}
for t in txs:
    if not t['ok']: continue
    if t['path']=='submit':
        for i,tid in enumerate(t['tags'].get('tasks',[])): sub[tid]=t
    for tid in t['tags'].get('assigned',[]) or []: asg[tid]=t
ids=[i for i in sorted(sub, key=lambda x: sub[x]['got'])[-last:] if i in asg]
rows=[]
for tid in ids:
    s=sub[tid]; a=asg[tid]
    created=s['trips'][0][1]; leased=a['trips'][0][1]
    j=bisect.bisect_left(wt, s['end']-0.01)
    w=wakes[j] if j<len(wakes) else None
    wake=w['t'] if w else s['end']
    r={}
    r['A submit: created_at → its COMMIT answered']=s['end']-created
    r['B COMMIT answered → wake-up']=wake-s['end']
    r['C wake-up → assigning tx asks a connection']=a['ask']-wake
    r['D pool wait']=a['got']-a['ask']
    r['E START + first trip (leased_at)']=leased-a['got']
    r['= created_at → leased_at']=leased-created
    r['F leased_at → assigning COMMIT answered']=a['end']-leased
    r['G COMMIT answered → frame written']=(delivered[tid]-a['end']) if tid in delivered else float('nan')
    r['_claim']=a['path']=='claim'
    r['_busy']=bool(w and w.get('busy'))
    r['_rounds_between']=bisect.bisect_left(rounds,a['ask']+0.001)-bisect.bisect_left(rounds,wake)
    rows.append(r)
def pct(v,p):
    v=sorted(x for x in v if x==x); return v[min(len(v)-1,int(p/100*len(v)))] if v else float('nan')
keys=[k for k in rows[0] if not k.startswith('_')]
tot='= created_at → leased_at'
print(f"tasks {len(rows)}; by a claim round {sum(r['_claim'] for r in rows)}, refilled in a result tx {sum(not r['_claim'] for r in rows)}; "
      f"woken while the application's round ran: {sum(r['_busy'] for r in rows)}")
tail=sorted(rows,key=lambda r:r[tot])[int(len(rows)*0.95):]
print("| phase (ms) | p50 | p90 | p99 | mean | mean of the slowest 5 % |\n| --- | --- | --- | --- | --- | --- |")
for k in keys:
    v=[r[k] for r in rows]; vv=[x for x in v if x==x]; tv=[r[k] for r in tail if r[k]==r[k]]
    print(f"| {k} | {pct(v,50):.1f} | {pct(v,90):.1f} | {pct(v,99):.1f} | {sum(vv)/max(1,len(vv)):.1f} | {sum(tv)/max(1,len(tv)):.1f} |")
print(f"slowest 5 %: {len(tail)} tasks, by a claim round {sum(r['_claim'] for r in tail)}, woken during a round {sum(r['_busy'] for r in tail)}, "
      f"rounds started between wake and the assigning one: {Counter(r['_rounds_between'] for r in tail if r['_claim'])}")
for r in tail: print('  ', ' '.join(f"{r[k]:.0f}" for k in keys), 'claim' if r['_claim'] else 'refill', 'busy' if r['_busy'] else 'idle')
t0=min(sub[i]['ask'] for i in ids); t1=max(asg[i]['end'] for i in ids)
win=[t for t in txs if t0<=t['ask']<=t1 and t['ok']]
print('\ntransactions in window', dict(Counter(t['path'] for t in win)), f'over {t1-t0:.0f} ms')
cl=[t for t in win if t['path']=='claim']
if cl:
    d=sorted(t['end']-t['got'] for t in cl); print(f"claim tx duration p50 {pct(d,50):.1f} p90 {pct(d,90):.1f} p99 {pct(d,99):.1f} ms, trips {Counter(len(t['trips']) for t in cl)}")
g=[d for (t,d) in gcs if t0<=t<=t1]
print(f"GC in window: {len(g)} pauses, {sum(g):.1f} ms, max {max(g) if g else 0:.1f} ms; event-loop delay over the gateway's life:", eld)
