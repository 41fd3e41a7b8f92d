/**
 * Pause and degrade flags (B3, B4, X4). The SSM parameter is the desired state; the event
 * source mapping is the actual state; a reconciler converges them.
 */
import { onFirstUse } from '../config/on-first-use';
import * as z from '../config/zod';

/** The JSON value of `/tenang/<stage>/flags/pause/<consumer>`; built when a flag is first read. */
export const pauseFlagSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    paused: z.boolean(),
    /** Why the consumer is paused; required when paused. */
    reason: z.optional(z.string().check(z.minLength(1))),
    /** ISO-8601 instant after which the pause is overdue (it alarms; it does not resume by itself). */
    until: z.optional(z.iso.datetime({ offset: true })),
    /** Who set the flag (CLI user, automation). */
    setBy: z.optional(z.string()),
  }),
);
export type PauseFlag = z.infer<ReturnType<typeof pauseFlagSchema>>;

/** The JSON value of `/tenang/<stage>/flags/degrade`; built when a flag is first read. */
export const degradeFlagSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    degraded: z.boolean(),
    reason: z.optional(z.string().check(z.minLength(1))),
    setBy: z.optional(z.string()),
  }),
);
export type DegradeFlag = z.infer<ReturnType<typeof degradeFlagSchema>>;

/** The value a pause flag is created with. */
export const NOT_PAUSED: PauseFlag = { paused: false };
/** The value the degrade flag is created with. */
export const NOT_DEGRADED: DegradeFlag = { degraded: false };

/** A pause flag read at an instant. */
export interface PauseState {
  readonly paused: boolean;
  readonly reason: string | undefined;
  readonly until: Date | undefined;
  /** Paused past its `until`: the pause alarms, but stays until someone resumes (X4). */
  readonly overdue: boolean;
  /** The stored value was not a valid flag; treated as not paused and reported. */
  readonly invalid: string | undefined;
}

/**
 * Reads a pause flag's stored value. An unreadable value never pauses a consumer (work keeps
 * flowing) but is reported so the reconciler can alarm on it.
 */
export function readPauseFlag(raw: string | undefined, now: Date): PauseState {
  if (raw === undefined)
    return { paused: false, reason: undefined, until: undefined, overdue: false, invalid: undefined };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { paused: false, reason: undefined, until: undefined, overdue: false, invalid: 'not JSON' };
  }
  const parsed = pauseFlagSchema().safeParse(json);
  if (!parsed.success) {
    const invalid = parsed.error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
    return { paused: false, reason: undefined, until: undefined, overdue: false, invalid };
  }
  const until = parsed.data.until === undefined ? undefined : new Date(parsed.data.until);
  return {
    paused: parsed.data.paused,
    reason: parsed.data.reason,
    until,
    overdue: parsed.data.paused && until !== undefined && until.getTime() <= now.getTime(),
    invalid: undefined,
  };
}

/** Reads the degrade flag; an unreadable value means not degraded. */
export function readDegradeFlag(raw: string | undefined): DegradeFlag {
  if (raw === undefined) return NOT_DEGRADED;
  try {
    const parsed = degradeFlagSchema().safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : NOT_DEGRADED;
  } catch {
    return NOT_DEGRADED;
  }
}

/** One consumer's desired and actual state. */
export interface MappingObservation {
  readonly consumer: string;
  readonly mappingId: string;
  readonly enabled: boolean;
  readonly flag: PauseState;
}

/** What the reconciler must change. */
export interface MappingChange {
  readonly consumer: string;
  readonly mappingId: string;
  readonly enabled: boolean;
}

/** The mapping updates that make every mapping's Enabled equal to `!paused`. */
export function planReconciliation(observations: readonly MappingObservation[]): MappingChange[] {
  return observations
    .filter((o) => o.enabled === o.flag.paused)
    .map((o) => ({ consumer: o.consumer, mappingId: o.mappingId, enabled: !o.flag.paused }));
}
