import test from 'ava';
import { noticeOf } from '../../../api/page-errors';
import { Problem } from '../../../api/problem';

// What a buyer's page says for a sold-out answer: sold out for good, for now, or fewer left than
// were asked for (then how many may still be had).

test('a sold-out answer reads as sold out, sold out for now, or only so many left', (t) => {
  const gone = noticeOf(new Problem(409, 'sold-out', 'x is sold out', { final: true }));
  t.like(gone, { title: 'Sold out', message: 'Sorry, this product is sold out.' });
  const forNow = noticeOf(new Problem(409, 'sold-out', 'x is sold out for now', { final: false, retryAt: 'later' }));
  t.is(forNow.title, 'Sold out for now');
  const fewer = noticeOf(
    new Problem(409, 'sold-out', 'only 2 of x left: ask for at most 2', { final: true, maxQuantity: 2 }),
  );
  t.like(fewer, { title: 'Only 2 left', message: 'There are fewer left than you asked for: choose at most 2.' });
});
