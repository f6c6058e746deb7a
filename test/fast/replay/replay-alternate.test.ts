import test from 'ava';
import { generations, replayGenerations } from '../helpers/replay';

// The other half of the replay guard (replay.test.ts): the generations it leaves, replayed beside it.

test('the current workflow code replays every recorded history of the generations between the others', (t) => {
  const count = generations().length;
  return replayGenerations(t, (place) => (count - 1 - place) % 2 === 1);
});
