/**
 * Creates the template's SNS subscriptions in the emulator with Subscribe: moto's CloudFormation
 * skips AWS::SNS::Subscription. With lib/local/moto_sns.py an e-mail or HTTP/S subscription is
 * then PendingConfirmation until its endpoint confirms it, as on AWS. Re-running subscribes the
 * same endpoints again, which SNS (and moto) answer with the existing subscription: nothing
 * changes, a pending one stays pending.
 */
import { SubscribeCommand, type SNSClient } from '@aws-sdk/client-sns';
import { resolve, type ResolveContext } from './template';

/** One subscription created, as `protocol endpoint → topic`. */
export interface ProvisionedSubscription {
  readonly topicArn: string;
  readonly protocol: string;
  readonly endpoint: string;
}

/** Subscribes every AWS::SNS::Subscription of the template. */
export async function provisionSubscriptions(
  sns: SNSClient,
  ctx: ResolveContext,
): Promise<ProvisionedSubscription[]> {
  const created: ProvisionedSubscription[] = [];
  for (const resource of Object.values(ctx.template.Resources)) {
    if (resource.Type !== 'AWS::SNS::Subscription') continue;
    const props = resolve(resource.Properties ?? {}, ctx) as Record<string, unknown>;
    const subscription = {
      topicArn: String(props.TopicArn),
      protocol: String(props.Protocol),
      endpoint: String(props.Endpoint),
    };
    await sns.send(
      new SubscribeCommand({
        TopicArn: subscription.topicArn,
        Protocol: subscription.protocol,
        Endpoint: subscription.endpoint,
      }),
    );
    created.push(subscription);
  }
  return created;
}
