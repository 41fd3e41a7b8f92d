import { GetParameterCommand, InternalServerError, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { SsmDegradeFlag } from '../../../lib/adapters/aws/ssm-degrade-flag';

const FLAG = '/tenang/unit/flags/degrade';
const ssmMock = mockClient(SSMClient);

function flagWith(value: string | undefined): SsmDegradeFlag {
  ssmMock
    .on(GetParameterCommand, { Name: FLAG })
    .resolves({ Parameter: { Name: FLAG, Value: value, Type: 'String' } });
  return new SsmDegradeFlag(new SSMClient({ region: 'eu-west-1' }), FLAG);
}

beforeEach(() => {
  ssmMock.reset();
});

describe('Class: SsmDegradeFlag', () => {
  describe('Method: isDegraded', () => {
    it.each([
      [JSON.stringify({ degraded: true, reason: 'provider outage' }), true],
      [JSON.stringify({ degraded: false }), false],
      ['not json', false],
      [JSON.stringify({ degraded: 'yes' }), false],
    ])('when the flag holds %s, it answers %p', async (value, expected) => {
      // Prepare
      const flag = flagWith(value);

      // Act
      const degraded = await flag.isDegraded();

      // Assess
      expect(degraded).toBe(expected);
    });

    it('when the parameter does not exist, it answers not degraded', async () => {
      // Prepare
      ssmMock.on(GetParameterCommand).rejects(new ParameterNotFound({ message: 'not found', $metadata: {} }));
      const flag = new SsmDegradeFlag(new SSMClient({ region: 'eu-west-1' }), FLAG);

      // Act
      const degraded = await flag.isDegraded();

      // Assess
      expect(degraded).toBe(false);
    });

    it('when SSM fails, it throws so the caller decides how to fail', async () => {
      // Prepare
      ssmMock.on(GetParameterCommand).rejects(new InternalServerError({ message: 'denied', $metadata: {} }));
      const flag = new SsmDegradeFlag(new SSMClient({ region: 'eu-west-1' }), FLAG);

      // Act
      const attempt = flag.isDegraded();

      // Assess
      await expect(attempt).rejects.toThrow('denied');
    });

    it('when read twice within the max age, it asks SSM once (Powertools cache)', async () => {
      // Prepare
      const flag = flagWith(JSON.stringify({ degraded: true }));

      // Act
      await flag.isDegraded();
      await flag.isDegraded();

      // Assess
      expect(ssmMock).toHaveReceivedCommandTimes(GetParameterCommand, 1);
    });

    it('when several callers ask at once with nothing cached, it asks SSM once and answers them all', async () => {
      // Prepare
      const flag = flagWith(JSON.stringify({ degraded: true }));

      // Act
      const answers = await Promise.all([flag.isDegraded(), flag.isDegraded(), flag.isDegraded()]);

      // Assess
      expect(answers).toEqual([true, true, true]);
      expect(ssmMock).toHaveReceivedCommandTimes(GetParameterCommand, 1);
    });

    it('when a shared read fails, the next call asks SSM again', async () => {
      // Prepare
      ssmMock
        .on(GetParameterCommand)
        .rejectsOnce(new InternalServerError({ message: 'denied', $metadata: {} }))
        .resolves({ Parameter: { Name: FLAG, Value: JSON.stringify({ degraded: true }), Type: 'String' } });
      const flag = new SsmDegradeFlag(new SSMClient({ region: 'eu-west-1' }), FLAG);

      // Act
      const first = await Promise.allSettled([flag.isDegraded(), flag.isDegraded()]);
      const second = await flag.isDegraded();

      // Assess
      expect(first.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect(second).toBe(true);
      expect(ssmMock).toHaveReceivedCommandTimes(GetParameterCommand, 2);
    });
  });
});
