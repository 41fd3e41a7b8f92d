/**
 * Composite alarms' actions suppressor: whether a composite's actions are held while its
 * suppressor alarm is in ALARM, during the extension period after, or during the wait period.
 */
import type { AlarmState } from './state';

/** What decides whether a composite alarm's actions are held by its actions suppressor. */
export interface SuppressionInput {
  readonly now: number;
  /** The suppressor alarm's state now. */
  readonly suppressorState: AlarmState;
  /** When the suppressor last left ALARM (ms), if it did. */
  readonly suppressorLeftAlarmAt: number | undefined;
  /** When the composite last changed state (ms). */
  readonly compositeChangedAt: number;
  readonly waitMs: number;
  readonly extensionMs: number;
}

/**
 * ActionsSuppressor semantics: actions are suppressed while the suppressor is in ALARM and for
 * the extension period after it leaves ALARM; after a composite transition they are also held
 * for the wait period, to give the suppressor time to go into ALARM. `suppressed` is the first
 * part (the suppressor's doing), `held` includes the wait.
 */
export function actionsSuppression(input: SuppressionInput): { suppressed: boolean; held: boolean } {
  const suppressed =
    input.suppressorState === 'ALARM' ||
    (input.suppressorLeftAlarmAt !== undefined &&
      input.now < input.suppressorLeftAlarmAt + input.extensionMs);
  return { suppressed, held: suppressed || input.now < input.compositeChangedAt + input.waitMs };
}
