/**
 * Mutation test of least privilege: a scratch copy of the app whose notification consumer lost
 * one grant (sqs:SendMessage on its own queue, which its deferrals need: the defect the local
 * platform could not see before it enforced IAM) is deployed to a local platform of its own. In
 * degrade mode the deferrable notification is deferred; the platform denies the re-send as AWS
 * would, logs `[iam] denied …`, and the runner holds the job instead of dead-lettering it: the
 * message stays in its queue, the DLQ stays empty, and the operator sees the denied action in
 * the platform log, the function's error line and the PermissionDenied metric. The alarm that
 * metric raises is published to the stage's topic, but its e-mail subscriber is still pending
 * confirmation, so no one is told until it is confirmed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { makeEnvelope } from '../../lib/core/envelope';
import type { LocalPlatform } from '../../lib/local/platform';
import { LOCAL_ALARM_EMAIL } from '../../lib/local/provision';
import { alarmsNotified } from '../../lib/local/scenario-invariants';
import { pollUntil } from '../../lib/local/poll';
import { startTestPlatform } from '../helpers/local-platform';
import { scratchCopy } from '../helpers/scratch-copy';

jest.setTimeout(240_000);

/** The grant the mutation removes, as lib/infra/worker-queue.ts writes it. */
const GRANT = 'if (!fifo) grantSend(this.queue, fn);';

/** A copy of the app (sources only; node_modules linked) with the consumer's own-queue send grant removed. */
function scratchCopyWithoutSendGrant(): string {
  const dir = scratchCopy('tenang-mutant-');
  const file = path.join(dir, 'lib', 'infra', 'worker-queue.ts');
  const source = fs.readFileSync(file, 'utf8');
  if (!source.includes(GRANT))
    throw new Error(`the mutation no longer applies: ${GRANT} is not in worker-queue.ts`);
  // Tenang-F4-QueueSendGrant would stop this synth (that is its job); the mutant acknowledges it
  // so that the defect reaches the platform, as it would reach an account without the pack.
  fs.writeFileSync(
    file,
    source.replace(
      GRANT,
      "Validations.of(this.consumer.function).acknowledge({ id: 'Tenang-F4-QueueSendGrant', reason: 'mutation test: the grant is removed on purpose' });",
    ),
  );
  return dir;
}

/** Polls until `probe` answers, at most 60 s. */
function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  return pollUntil(probe, { description: what, deadlineMs: 60_000, intervalMs: 250 });
}

describe('IAM mutation: a consumer without sqs:SendMessage on its own queue', () => {
  let platform: LocalPlatform;
  let lines: string[];
  let scratch: string;
  let sqs: SQSClient;
  let ssm: SSMClient;

  beforeAll(async () => {
    scratch = scratchCopyWithoutSendGrant();
    // Two-second alarm periods: the permission-denied alarm fires within the test.
    ({ platform, lines } = await startTestPlatform({ projectRoot: scratch, alarms: { periodSeconds: 2 } }));
    const config = { endpoint: platform.env.endpoint, region: platform.env.region };
    sqs = new SQSClient({ ...config, useQueueUrlAsEndpoint: false });
    ssm = new SSMClient(config);
  });

  afterAll(async () => {
    await platform?.stop();
    for (const c of [sqs, ssm]) c?.destroy();
    if (scratch !== undefined) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('when the consumer defers a job, the re-send is denied, logged, and the job is held in its queue, not dead-lettered', async () => {
    // Prepare
    const mapping = platform.deployment.sqsMappings.find((m) =>
      m.functionName.endsWith('-notification-consumer'),
    );
    if (mapping === undefined) throw new Error('no notification consumer mapping');
    const queueName = mapping.queueUrl.slice(mapping.queueUrl.lastIndexOf('/') + 1);
    const dlqUrl = mapping.queueUrl.replace(queueName, `${queueName}-dlq`);
    await ssm.send(
      new PutParameterCommand({
        Name: '/tenang/dev/flags/degrade',
        Value: JSON.stringify({ degraded: true, reason: 'mutation test' }),
        Type: 'String',
        Overwrite: true,
      }),
    );
    const orderId = `order-${randomUUID()}`;
    const job = makeEnvelope(
      'notification.send',
      { orderId, template: 'order-paid', recipient: 'buyer@example.com', orderVersion: 2 },
      { idempotencyKey: `notify:${orderId}`, correlationId: randomUUID(), now: new Date() },
    );

    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: mapping.queueUrl, MessageBody: JSON.stringify(job) }));
    const denial = await until(
      async () => lines.find((l) => l.includes('[iam] denied') && l.includes('sqs:SendMessage')),
      'the denied re-send',
    );
    await until(
      async () => (lines.some((l) => l.includes('PermissionDenied')) ? true : undefined),
      'the PermissionDenied metric',
    );
    // Give a wrongly dead-lettering runner the time to do it.
    await new Promise((r) => setTimeout(r, 3_000));
    const counts = async (url: string): Promise<number[]> => {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return [
        Number(Attributes.ApproximateNumberOfMessages),
        Number(Attributes.ApproximateNumberOfMessagesNotVisible),
      ];
    };

    // Assess
    expect(denial).toMatch(
      new RegExp(
        `\\[iam\\] denied \\S*NotificationSendConsumerRole\\S* sqs:SendMessage arn:aws:sqs:[^ ]*:${queueName}$`,
      ),
    );
    expect(platform.iam?.denials()).toContainEqual(
      expect.objectContaining({
        action: 'sqs:SendMessage',
        resource: expect.stringMatching(new RegExp(`:${queueName}$`)),
      }),
    );
    const [visible = 0, held = 0] = await counts(mapping.queueUrl);
    expect(visible + held).toBe(1);
    expect(await counts(dlqUrl)).toEqual([0, 0]);
    expect(platform.providers.messaging.ledger().some((e) => JSON.stringify(e.body).includes(orderId))).toBe(
      false,
    );
    // What the operator reads in the function's own log: the denied action.
    expect(lines.some((l) => l.includes('-notification-consumer:') && /AccessDenied/.test(l))).toBe(true);
  });

  it('when the permission-denied alarm fires while the alarm e-mail is unconfirmed, the notification reaches the topic and no one, and the alarm invariant fails', async () => {
    // Act: the denial of the previous test keeps the alarm's metric above its threshold.
    const published = await until(
      async () =>
        platform.alarms
          .deliveries()
          .find((d) => d.alarm.endsWith('-notification-consumer-permission-denied') && d.state === 'ALARM'),
      'the permission-denied notification',
    );
    const verdict = alarmsNotified({ alarmNotifications: { owed: 1, deliveries: [published] } });
    const confirmed = await platform.confirmSubscriptions();

    // Assess: CloudWatch may publish (aws:SourceAccount / aws:SourceArn), SNS holds the e-mail.
    expect(published.outcome).toBe('delivered');
    expect(published.fanOut).toEqual({ subscribers: [], pending: [`email ${LOCAL_ALARM_EMAIL}`] });
    expect(verdict.holds).toBe(false);
    expect(verdict.violations[0]).toContain(`email ${LOCAL_ALARM_EMAIL} pending confirmation`);
    expect(lines.some((l) => l.includes('no confirmed subscriber received it'))).toBe(true);
    expect(confirmed).toEqual([expect.objectContaining({ protocol: 'email', endpoint: LOCAL_ALARM_EMAIL })]);
    expect(await platform.confirmSubscriptions()).toEqual([]);
  });
});
