/**
 * The alarm e-mail given on the command line (`cdk deploy -c tenang:alarmEmail=you@example.com`),
 * as a change of the declaration. Pure, so that code which only reads declarations (the tests'
 * setup, the CLI) applies it without loading aws-cdk-lib.
 */
import type { PipelineInput } from './schema';

/**
 * CDK context key that adds one e-mail subscriber to the stage's alarms, on top of the
 * declaration's `stage.alarmTopic.deliverTo`: `cdk deploy -c tenang:alarmEmail=you@example.com`.
 */
export const ALARM_EMAIL_CONTEXT_KEY = 'tenang:alarmEmail';

/**
 * The declaration with the e-mail given as CDK context (`-c tenang:alarmEmail=…`) added to its
 * alarm subscribers, once; it replaces a `{ none }`, since someone is now told. The config loader
 * validates the address with the rest.
 */
export function withAlarmEmail(declaration: PipelineInput, email: unknown): PipelineInput {
  if (email === undefined || email === '') return declaration;
  if (typeof email !== 'string') throw new Error(`CDK context ${ALARM_EMAIL_CONTEXT_KEY} must be a string`);
  const topic = declaration.stage.alarmTopic;
  const declared = Array.isArray(topic.deliverTo) ? (topic.deliverTo as readonly unknown[]) : [];
  // Given twice (declared and on the command line, or a declaration that already went through
  // here), it is still one subscriber: CDK would refuse a second subscription of one address.
  if (declared.some((d) => typeof d === 'object' && d !== null && (d as { email?: unknown }).email === email))
    return declaration;
  const deliverTo = [...declared, { email }] as typeof topic.deliverTo;
  return { ...declaration, stage: { ...declaration.stage, alarmTopic: { ...topic, deliverTo } } };
}
