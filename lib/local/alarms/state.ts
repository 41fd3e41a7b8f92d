/**
 * Alarm states, as CloudWatch names them, and the records the local evaluator keeps of what
 * happened to alarms: current states, state changes, the actions they owed and the notifications
 * those actions sent.
 */

/** An alarm's state, as CloudWatch names it. */
export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';

/** Whether an alarm lives in moto (metric) or only here (composite). */
export type AlarmKind = 'metric' | 'composite';

/** One alarm's current state. */
export interface AlarmStatus {
  readonly name: string;
  readonly state: AlarmState;
  readonly kind: AlarmKind;
  /** Composite alarms with an actions suppressor: its actions are held by the suppressor now. */
  readonly suppressed?: boolean;
}

/** One state change, in the order they happened. */
export interface Transition {
  readonly alarm: string;
  readonly kind: AlarmKind;
  readonly from: AlarmState;
  readonly to: AlarmState;
  readonly at: Date;
  readonly reason: string;
}

/** What became of the actions (SNS notifications) an alarm's transition owes. */
export interface AlarmAction {
  readonly alarm: string;
  readonly kind: AlarmKind;
  /** The state whose actions these are. */
  readonly state: AlarmState;
  /** When the transition that owed them happened. */
  readonly transitionAt: Date;
  /** `sent` when they would have run; `suppressed` when the alarm left the state while they were held. */
  readonly outcome: 'sent' | 'suppressed';
  readonly at: Date;
}

/** One notification an alarm action sends (CloudWatch publishing to the action's SNS topic). */
export interface AlarmNotification {
  readonly alarm: string;
  /** arn:aws:cloudwatch:<region>:<account>:alarm:<name>, CloudWatch's aws:SourceArn for the publish. */
  readonly alarmArn?: string;
  readonly kind: AlarmKind;
  readonly state: AlarmState;
  /** The action's ARN (an SNS topic). */
  readonly target: string;
  readonly reason: string;
  readonly at: Date;
}

/** What SNS did with a published notification for one confirmed subscriber of the topic. */
export interface SubscriberDelivery {
  readonly protocol: string;
  readonly endpoint: string;
  /**
   * `delivered`: POSTed to a loopback HTTP/S endpoint that answered 2xx; `recorded`: SNS would
   * deliver it, but the platform sends no mail and reaches no host outside this machine;
   * `failed`: the endpoint refused it or could not be reached.
   */
  readonly outcome: 'delivered' | 'recorded' | 'failed';
  readonly error?: string;
  readonly at: Date;
}

/** Who a published notification reached: one entry per confirmed subscriber, and the pending ones. */
export interface NotificationFanOut {
  readonly subscribers: readonly SubscriberDelivery[];
  /** Subscriptions of the topic awaiting confirmation, as `protocol endpoint`: delivered nothing. */
  readonly pending: readonly string[];
}

/** What became of one notification. */
export interface AlarmDelivery extends AlarmNotification {
  /** `delivered`: published to the topic (what SNS then did is in `fanOut`). */
  readonly outcome: 'delivered' | 'failed';
  /** Why it failed (e.g. AuthorizationError: CloudWatch may not publish to the topic). */
  readonly error?: string;
  /**
   * Who it reached; no subscriber at all means it was published and read by no one.
   * @default - unknown (notify did not say)
   */
  readonly fanOut?: NotificationFanOut;
}
