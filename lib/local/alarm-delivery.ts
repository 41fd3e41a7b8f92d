/**
 * What SNS does after CloudWatch publishes an alarm notification: deliver it to each confirmed
 * subscriber of the topic. moto (with lib/local/moto_sns.py) keeps e-mail and HTTP/S
 * subscriptions PendingConfirmation until ConfirmSubscription, as AWS does; this module reads the
 * topic's subscriptions after a publish and records, per confirmed subscriber, what became of the
 * notification, so a test can tell "published" from "someone was told".
 *
 * Emulated: an HTTP/S subscriber on this machine (loopback) gets the notification POSTed in SNS's
 * HTTP/S format (https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html, without
 * a signature); any other endpoint, e-mail included, is recorded as SNS would deliver it: no mail
 * is sent and no other host is reached. Not emulated: SNS's delivery retries and policies.
 */
import { randomUUID } from 'node:crypto';
import {
  ConfirmSubscriptionCommand,
  paginateListSubscriptionsByTopic,
  type SNSClient,
} from '@aws-sdk/client-sns';
import type { NotificationFanOut, SubscriberDelivery } from './alarms/state';

/** SNS's SubscriptionArn for a subscription its endpoint has not confirmed. */
const PENDING = 'PendingConfirmation';
/** Where lib/local/moto_sns.py lists the pending subscriptions' tokens (the mail or POST they would ride in). */
const PENDING_PATH = '/_tenang/sns/pending-confirmations';
/** How long a loopback HTTP/S subscriber may take to answer, ms. */
const POST_TIMEOUT_MS = 5_000;

/** One notification as published. */
export interface PublishedNotification {
  readonly topicArn: string;
  readonly subject: string;
  readonly message: string;
}

function isLoopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || url.hostname.startsWith('127.');
}

async function post(
  endpoint: string,
  subscriptionArn: string,
  n: PublishedNotification,
): Promise<{ outcome: SubscriberDelivery['outcome']; error?: string }> {
  const url = new URL(endpoint);
  if (!isLoopback(url)) return { outcome: 'recorded' };
  const messageId = randomUUID();
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain; charset=UTF-8',
        'x-amz-sns-message-type': 'Notification',
        'x-amz-sns-message-id': messageId,
        'x-amz-sns-topic-arn': n.topicArn,
        'x-amz-sns-subscription-arn': subscriptionArn,
      },
      body: JSON.stringify({
        Type: 'Notification',
        MessageId: messageId,
        TopicArn: n.topicArn,
        Subject: n.subject,
        Message: n.message,
        Timestamp: new Date().toISOString(),
      }),
      signal: AbortSignal.timeout(POST_TIMEOUT_MS),
    });
    return response.ok ? { outcome: 'delivered' } : { outcome: 'failed', error: `HTTP ${response.status}` };
  } catch (error) {
    return { outcome: 'failed', error: error instanceof Error ? error.message : String(error) };
  }
}

/** Delivers a published notification to each confirmed subscriber of its topic; lists the pending ones. */
export async function fanOut(
  sns: SNSClient,
  n: PublishedNotification,
  now: () => Date = () => new Date(),
): Promise<NotificationFanOut> {
  const subscribers: SubscriberDelivery[] = [];
  const pending: string[] = [];
  for await (const page of paginateListSubscriptionsByTopic({ client: sns }, { TopicArn: n.topicArn })) {
    for (const s of page.Subscriptions ?? []) {
      const protocol = s.Protocol ?? '?';
      const endpoint = s.Endpoint ?? '?';
      if (s.SubscriptionArn === PENDING || s.SubscriptionArn === undefined) {
        pending.push(`${protocol} ${endpoint}`);
        continue;
      }
      const result =
        protocol === 'http' || protocol === 'https'
          ? await post(endpoint, s.SubscriptionArn, n)
          : { outcome: 'recorded' as const };
      subscribers.push({ protocol, endpoint, ...result, at: now() });
    }
  }
  return { subscribers, pending };
}

/** A subscription the platform confirmed. */
export interface ConfirmedSubscription {
  readonly topicArn: string;
  readonly protocol: string;
  readonly endpoint: string;
  readonly subscriptionArn: string;
}

/**
 * Confirms pending subscriptions as their endpoints' owners would: reads each token where the
 * mail or SubscriptionConfirmation POST would have carried it (the emulator's pending list) and
 * calls ConfirmSubscription with it. `which` picks them (default: all). A moto without tenang's
 * SNS patch has nothing pending (it confirms everything at once): nothing to do.
 */
export async function confirmPendingSubscriptions(
  emulatorEndpoint: string,
  sns: SNSClient,
  which: (s: { topicArn: string; protocol: string; endpoint: string }) => boolean = () => true,
): Promise<ConfirmedSubscription[]> {
  const response = await fetch(new URL(PENDING_PATH, emulatorEndpoint));
  if (!response.ok) return [];
  const listed = (await response.json()) as {
    TopicArn: string;
    Protocol: string;
    Endpoint: string;
    Token: string;
  }[];
  const confirmed: ConfirmedSubscription[] = [];
  for (const p of listed) {
    const s = { topicArn: p.TopicArn, protocol: p.Protocol, endpoint: p.Endpoint };
    if (!which(s)) continue;
    const { SubscriptionArn } = await sns.send(
      new ConfirmSubscriptionCommand({ TopicArn: p.TopicArn, Token: p.Token }),
    );
    confirmed.push({ ...s, subscriptionArn: SubscriptionArn ?? '' });
  }
  return confirmed;
}
