// The renew frames of one session, coalesced: at most one renew transaction of a session runs at a
// time, and the frames that arrive meanwhile go into the next one — one credential check, one
// UPDATE and one read-back for all of them (server/dispatch/renew.ts renewAttempts), whatever
// their number. A batch takes frames in arrival order until their distinct ids would pass
// MAX_IDS_PER_FRAME, so its statements are never larger than those of one valid frame.
//
// Each frame still gets its own renew.ok, in arrival order: `leases` for its ids that the batch
// renewed, `lost` for the others (as the frame named them: duplicates and malformed ids included),
// exactly what the frame alone would have been answered at that moment. A failed batch (a revoked
// credential, the database) fails each of its frames with that error.
//
// Before this, every renew frame opened its own pooled transaction: one session's 20 000 renews of
// one attempt were 20 000 transactions queued for the pool ahead of every other tenant's work.
import { MAX_IDS_PER_FRAME } from '@orbit/protocol/limits';

export interface RenewReply {
  leases: { attempt_id: string; lease_expires_at: string }[];
  lost: string[];
}

/** Runs one renew transaction for `ids` (distinct) and answers it as for one frame. */
export type RenewRunner = (ids: string[]) => Promise<RenewReply>;

interface Waiting {
  ids: string[];
  resolve: (r: RenewReply) => void;
  reject: (err: unknown) => void;
}

export class RenewCoalescer {
  private readonly waiting: Waiting[] = [];
  private running = false;

  constructor(
    private readonly run: RenewRunner,
    /** Frames per committed batch, for orbit_renew_batch_size. */
    private readonly onBatch: (frames: number) => void = () => {},
    private readonly maxIds = MAX_IDS_PER_FRAME,
  ) {}

  /** One renew frame's ids; resolves with its reply after the batch that carried it committed. */
  renew(ids: string[]): Promise<RenewReply> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ids, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running || this.waiting.length === 0) return;
    this.running = true;
    const union = new Set<string>();
    let n = 0;
    for (; n < this.waiting.length; n++) {
      const ids = this.waiting[n]!.ids;
      const added = ids.filter((id) => !union.has(id));
      if (n > 0 && union.size + new Set(added).size > this.maxIds) break;
      for (const id of added) union.add(id);
    }
    const batch = this.waiting.splice(0, n);
    void this.execute(batch, [...union]).finally(() => {
      this.running = false;
      this.pump();
    });
  }

  private async execute(batch: Waiting[], ids: string[]): Promise<void> {
    let r: RenewReply;
    try {
      r = await this.run(ids);
    } catch (err) {
      for (const w of batch) w.reject(err);
      return;
    }
    const renewed = new Map(r.leases.map((l) => [l.attempt_id, l.lease_expires_at]));
    for (const w of batch) {
      const own = [...new Set(w.ids)].filter((id) => renewed.has(id));
      w.resolve({
        leases: own.map((attempt_id) => ({ attempt_id, lease_expires_at: renewed.get(attempt_id)! })),
        lost: w.ids.filter((id) => !renewed.has(id)),
      });
    }
    // After every frame is answered: a throwing observer must not leave frames unanswered (and
    // counted in the session's window, which would stay paused).
    this.onBatch(batch.length);
  }
}
