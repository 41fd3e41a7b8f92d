import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { referenceApp } from '../../examples/reference/reference-app';
import { ALARM_EMAIL_CONTEXT_KEY } from '../../lib/infra/target';

/** The subscriber every synthesis here passes, as a deployer does with -c tenang:alarmEmail=…. */
const ON_CALL = 'on-call@example.com';

function synthesize(context: Record<string, string> = {}): {
  outdir: string;
  template: Template;
  stackName: string;
} {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-synth-'));
  const app = new App({ outdir, context: { [ALARM_EMAIL_CONTEXT_KEY]: ON_CALL, ...context } });
  const { stack } = referenceApp(app, 'eu-west-1');
  app.synth();
  return { outdir, template: Template.fromStack(stack), stackName: stack.stackName };
}

let deployerSynthesis: ReturnType<typeof synthesize> | undefined;
/**
 * The synthesis a deployer runs (`-c tenang:alarmEmail=…`, nothing else), made once for the tests
 * that only read it: each synthesis bundles every function and runs both cdk-nag packs.
 */
function deployerSynth(): ReturnType<typeof synthesize> {
  deployerSynthesis ??= synthesize();
  return deployerSynthesis;
}

describe('Function: buildApp', () => {
  it('when synthesized, it reports no AwsSolutions or Serverless finding, not even a warning', () => {
    // Act
    const { outdir } = deployerSynth();

    // Assess
    const report = JSON.parse(fs.readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: { pluginName: string; violations: { ruleName: string }[] }[];
    };
    expect(
      report.pluginReports.flatMap((r) => r.violations.map((v) => `${r.pluginName}: ${v.ruleName}`)),
    ).toEqual([]);
  });

  it('when a construct breaks a rule of either pack, synthesis fails naming the rule', () => {
    // Prepare
    const app = new App({
      outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-synth-')),
      context: { [ALARM_EMAIL_CONTEXT_KEY]: ON_CALL },
    });
    const { stack } = referenceApp(app, 'eu-west-1');
    new sqs.Queue(stack, 'Unprotected', { encryption: sqs.QueueEncryption.UNENCRYPTED });

    // Act
    const act = (): unknown => app.synth();

    // Assess
    expect(act).toThrow(/AwsSolutions-SQS2[\s\S]*Serverless-SQSRedrivePolicy/);
    const report = fs.readFileSync(path.join(app.outdir, 'validation-report.json'), 'utf8');
    expect(report).toContain('AwsSolutions-SQS2');
    expect(report).toContain('Serverless-SQSRedrivePolicy');
  });

  it('when the template is linted with cfn-lint, it has no error or warning', () => {
    // Prepare
    const { outdir, stackName } = deployerSynth();
    const templatePath = path.join(outdir, `${stackName}.template.json`);

    // Act
    const run = (): string =>
      execFileSync('cfn-lint', ['--format', 'parseable', templatePath], { encoding: 'utf8' });

    // Assess
    expect(run).not.toThrow();
  });

  it('when the example is synthesized without a subscriber, synthesis fails naming Tenang-F5-AlarmSubscriber and what to add', () => {
    // Act
    const act = (): unknown => synthesize({ [ALARM_EMAIL_CONTEXT_KEY]: '' });

    // Assess
    expect(act).toThrow(
      /has no subscriber[\s\S]*-c tenang:alarmEmail=you@example.com[\s\S]*Tenang-F5-AlarmSubscriber/,
    );
  });

  it('when synthesized with -c tenang:alarmEmail, every topic an alarm notifies has an AWS::SNS::Subscription, the e-mail one', () => {
    // Act
    const { template } = deployerSynth();

    // Assess
    const json = template.toJSON() as {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    const topics = new Set(
      Object.values(json.Resources)
        .filter((r) => r.Type === 'AWS::CloudWatch::Alarm' || r.Type === 'AWS::CloudWatch::CompositeAlarm')
        .flatMap((r) =>
          [...((r.Properties?.AlarmActions as { Ref: string }[] | undefined) ?? [])].map((a) => a.Ref),
        ),
    );
    const subscribed = Object.values(json.Resources)
      .filter((r) => r.Type === 'AWS::SNS::Subscription')
      .map((r) => ({
        topic: (r.Properties?.TopicArn as { Ref: string }).Ref,
        endpoint: r.Properties?.Endpoint,
        protocol: r.Properties?.Protocol,
      }));
    expect(topics.size).toBe(1);
    expect(subscribed).toEqual([...topics].map((topic) => ({ topic, endpoint: ON_CALL, protocol: 'email' })));
  });

  it('when the target context is unknown, it fails naming the allowed values', () => {
    // Act
    const act = (): unknown => synthesize({ 'tenang:target': 'staging' });

    // Assess
    expect(act).toThrow(/tenang:target must be "aws" or "emulator"/);
  });

  it('when synthesized, it creates a queue and a DLQ per job type, an on-failure queue per stream consumer, the side queue of expiring work, and the five tables', () => {
    // Act
    const { template } = deployerSynth();

    // Assess
    // A queue and a DLQ per job type, an on-failure queue per stream consumer, the notifications' side queue.
    template.resourceCountIs('AWS::SQS::Queue', 3 * 2 + 2 + 1);
    template.resourceCountIs('AWS::DynamoDB::Table', 5);
    template.hasResourceProperties('AWS::SQS::Queue', {
      QueueName: 'tenang-dev-payment-capture.fifo',
      FifoQueue: true,
      VisibilityTimeout: 180,
    });
  });
});
