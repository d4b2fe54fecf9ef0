# Reads a gateway's ORBIT_PHASE_TRACE file (server/phase-trace.ts, temporary) and prints the phases of
# the last N tasks submitted (the unkeyed-paced scenario of a bench run): python3 bench/phase-trace-report.py FILE.PID N
# docs/benchmarks.md "Where the paced p99 goes" shows its output.
import json, sys, bisect
from collections import defaultdict
f = sys.argv[1]; last = int(sys.argv[2])
txs=[]; rounds=[]; gcs=[]; eld=None
for line in open(f):
    line=line.strip()
    if not line: continue
    e=json.loads(line); k=e['k']
    if k=='tx': txs.append(e)
    elif k=='round': rounds.append(e['t'])
    elif k=='gc': gcs.append((e['t'], e['dur']))
    elif k=='eld': eld=e
rounds.sort()
sub={}; asg={}
for t in txs:
    if not t['ok']: continue
    if t['path']=='submit':
        for i,tid in enumerate(t['tags'].get('tasks',[])):
            sub[tid]=(t,t['tags']['enq'][i])
    for tid in t['tags'].get('assigned',[]) or []: asg[tid]=t
ids=[i for i in sorted(sub, key=lambda x: sub[x][0]['got'])[-last:] if i in asg]
def hot(tr): return 'UPDATE queues' in tr[2] or 'UPDATE applications' in tr[2]
rows=[]
for tid in ids:
    s,enq=sub[tid]; a=asg[tid]
    tr=s['trips']; cm=tr[-1]
    first_hot=next((x for x in tr if hot(x)), cm)
    r={}
    r['1 coalescer wait (enqueue→tx asks a connection)']=s['ask']-enq
    r['2 pool wait']=s['got']-s['ask']
    r['3 START + queue/clock read trip (created_at)']=tr[0][1]-tr[0][0]
    r['4 receipts read, until the hot-row trip is sent']=first_hot[0]-tr[0][1]
    r['5 hot-row trips before the COMMIT trip']=sum(x[1]-x[0] for x in tr[1:-1] if hot(x))
    r['6 COMMIT trip']=cm[1]-cm[0]
    r['7 submit committed → assigning tx asks a connection']=a['ask']-s['end']
    r['8 assigning tx: begin → clock answer (leased_at)']=a['trips'][0][1]-a['got']
    r['= created_at→leased_at (gateway clock: clock trip answers)']=a['trips'][0][1]-tr[0][1]
    r['_claim']=a['path']=='claim'
    rows.append(r)
def pct(v,p):
    v=sorted(v); return v[min(len(v)-1,int(p/100*len(v)))] if v else float('nan')
keys=[k for k in rows[0] if not k.startswith('_')]
print(f"tasks {len(rows)}; assigned by a claim round {sum(r['_claim'] for r in rows)}, refilled in a result tx {sum(not r['_claim'] for r in rows)}")
print(f"| phase (ms) | p50 | p90 | p99 | mean | mean of the slowest 5 % |\n| --- | --- | --- | --- | --- | --- |")
tot=keys[-1]
tail=sorted(rows,key=lambda r:r[tot])[int(len(rows)*0.95):]
for k in keys:
    v=[r[k] for r in rows]
    print(f"| {k} | {pct(v,50):.1f} | {pct(v,90):.1f} | {pct(v,99):.1f} | {sum(v)/len(v):.1f} | {sum(r[k] for r in tail)/len(tail):.1f} |")
t0=min(sub[i][0]['ask'] for i in ids); t1=max(asg[i]['end'] for i in ids)
win=[t for t in txs if t0<=t['ask']<=t1 and t['ok']]
# holders of hot rows: interval [send of first trip touching the row, tx end]
def intervals(row):
    out=[]
    for t in win:
        x=next((tr for tr in t['trips'] if row in tr[2]), None)
        if x: out.append((x[0], t['end'], t['path'], t['id'], x))
    return out
print("\nhot-row statements waiting while another transaction holds the row (overlap of [its send, its answer] with the holder's [row statement sent, commit answered]):")
print("| row | waiting statement of | holder | count | est. ms per task |\n| --- | --- | --- | --- | --- |")
n=len(rows)
for row,label in [('UPDATE queues','queue'),('UPDATE applications','application')]:
    iv=intervals(row)
    agg=defaultdict(lambda:[0,0.0])
    for (s0,e0,p,i,x) in iv:
        for (s1,e1,p1,i1,x1) in iv:
            if i1==i: continue
            if s1 < x[0] < e1:   # holder locked before our statement was sent, committed after
                w=min(x[1],e1)-x[0]
                agg[(p,p1)][0]+=1; agg[(p,p1)][1]+=w
    for (p,p1),(c,w) in sorted(agg.items()):
        print(f"| {label} | {p} | {p1} | {c} | {w/n:.2f} |")
from collections import Counter
print('\ntransactions in window', dict(Counter(t['path'] for t in win)), f'over {t1-t0:.0f} ms')
g=[d for (t,d) in gcs if t0<=t<=t1]
print(f"GC in window: {len(g)} pauses, {sum(g):.1f} ms, max {max(g) if g else 0:.1f} ms; event-loop delay over the gateway's life:", eld)
