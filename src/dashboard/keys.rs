//! What a key means, as a pure function of the app's state and the key: no state is changed
//! here and nothing is sent; `App::apply` carries the resulting [`Action`] out.
//!
//! Values that depend on the current setting (the next delay step, the next worker count) are
//! computed here, so the action says exactly what will be asked of the engine.
//!
//! While the search prompt or the sites filter prompt is open every key edits it (`q`, `p`,
//! `+` are letters then); only Ctrl-C keeps its meaning.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::dashboard::app::{Action, App, Lifecycle, Mode, Scroll};
use crate::dashboard::layout::Pane;
use crate::dashboard::search::Edit;
use crate::snapshot::RunState;

/// The politeness delay steps `+` and `-` move through.
pub const DELAY_STEPS_MS: [u64; 9] = [0, 50, 100, 250, 500, 1_000, 2_000, 5_000, 10_000];

pub const MIN_WORKERS: usize = 1;
pub const MAX_WORKERS: usize = 4096;
/// Below this, `]` and `[` add or remove one worker; from here on, a quarter.
const FINE_WORKERS: usize = 8;

pub fn action(app: &App, key: KeyEvent) -> Option<Action> {
    // Terminals that report releases (Windows, the kitty protocol) would act twice otherwise.
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let finished = app.snapshot().state == RunState::Finished;
    if key.modifiers.contains(KeyModifiers::CONTROL) && matches!(key.code, KeyCode::Char('c')) {
        return Some(interrupt(app));
    }
    if app.search().prompt().is_some() {
        return prompt_key(key);
    }
    if app.filter_prompt().is_some() {
        return filter_key(key);
    }
    let plain = !key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
    let searching = app.mode() == Mode::Search;
    if finished {
        // The final screen stays for searching the finished crawl; any other key leaves.
        return Some(match key.code {
            KeyCode::Char('/') if plain => Action::OpenSearch,
            _ if !plain || !searching => Action::Exit,
            code => results_key(code).unwrap_or(Action::Exit),
        });
    }
    if app.mode() == Mode::Help {
        return Some(Action::Close);
    }
    if !plain {
        return None;
    }
    if searching && let Some(action) = results_key(key.code) {
        return Some(action);
    }
    let in_detail = matches!(app.mode(), Mode::SiteDetail(_));
    let quitting = matches!(
        app.lifecycle(),
        Lifecycle::QuitWhenFinished | Lifecycle::Leaving
    );
    match key.code {
        KeyCode::Char('p' | ' ') => toggle_pause(app),
        KeyCode::Char('+' | '=') => delay_up(app.delay()).map(Action::SetDelay),
        KeyCode::Char('-') => delay_down(app.delay()).map(Action::SetDelay),
        KeyCode::Char(']') => workers_up(app.workers()).map(Action::SetWorkers),
        KeyCode::Char('[') => workers_down(app.workers()).map(Action::SetWorkers),
        KeyCode::Char('s') if !quitting && app.snapshot().state != RunState::Stopping => {
            Some(Action::Stop)
        }
        KeyCode::Char('q') if !quitting => Some(Action::Quit),
        KeyCode::Char('e') => Some(Action::Export),
        KeyCode::Char('?') => Some(Action::Help),
        KeyCode::Char('/') => Some(Action::OpenSearch),
        KeyCode::Esc | KeyCode::Enter if in_detail => Some(Action::Close),
        _ if in_detail || searching => None,
        KeyCode::Enter if app.focus() == Pane::Sites && app.site_under_cursor().is_some() => {
            Some(Action::OpenDetail)
        }
        KeyCode::Char('o') => Some(Action::CycleSort),
        KeyCode::Char('f') => Some(Action::OpenFilter),
        KeyCode::Char('c') => Some(Action::ToggleMembers),
        KeyCode::Tab => Some(Action::FocusNext),
        KeyCode::BackTab => Some(Action::FocusPrev),
        KeyCode::Up | KeyCode::Char('k') => Some(Action::Scroll(Scroll::Up)),
        KeyCode::Down | KeyCode::Char('j') => Some(Action::Scroll(Scroll::Down)),
        KeyCode::PageUp => Some(Action::Scroll(Scroll::PageUp)),
        KeyCode::PageDown => Some(Action::Scroll(Scroll::PageDown)),
        KeyCode::Home => Some(Action::Scroll(Scroll::Home)),
        KeyCode::End => Some(Action::Scroll(Scroll::End)),
        _ => None,
    }
}

/// What Ctrl-C means, typed or sent as SIGINT: the first stops the crawl and leaves when it has
/// finished, a second leaves at once; on a finished crawl it leaves.
pub fn interrupt(app: &App) -> Action {
    match app.lifecycle() {
        _ if app.snapshot().state == RunState::Finished => Action::Exit,
        Lifecycle::Watching | Lifecycle::StopAskedHere => Action::Quit,
        Lifecycle::QuitWhenFinished | Lifecycle::Leaving => Action::QuitNow,
    }
}

/// A key while the prompt is open: it edits the query, whatever it means elsewhere.
fn prompt_key(key: KeyEvent) -> Option<Action> {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    if key.modifiers.contains(KeyModifiers::ALT) {
        return None;
    }
    Some(match key.code {
        KeyCode::Enter => Action::RunSearch,
        KeyCode::Esc => Action::ClosePrompt,
        KeyCode::Backspace => Action::Prompt(Edit::Backspace),
        KeyCode::Up => Action::Prompt(Edit::Older),
        KeyCode::Down => Action::Prompt(Edit::Newer),
        KeyCode::Char('u') if control => Action::Prompt(Edit::Clear),
        KeyCode::Char('w') if control => Action::Prompt(Edit::DeleteWord),
        // What some terminals send for Backspace.
        KeyCode::Char('h') if control => Action::Prompt(Edit::Backspace),
        KeyCode::Char(c) if !control && !c.is_control() => Action::Prompt(Edit::Insert(c)),
        _ => return None,
    })
}

/// A key while the filter prompt is open: it edits the filter; Enter applies it, Esc clears it.
fn filter_key(key: KeyEvent) -> Option<Action> {
    Some(match prompt_key(key)? {
        Action::RunSearch => Action::ApplyFilter,
        Action::ClosePrompt => Action::ClearFilter,
        Action::Prompt(Edit::Older | Edit::Newer) => return None,
        Action::Prompt(edit) => Action::FilterPrompt(edit),
        _ => return None,
    })
}

/// A key the results pane takes before the crawl keys: it scrolls, refreshes, closes.
fn results_key(code: KeyCode) -> Option<Action> {
    Some(match code {
        KeyCode::Esc => Action::Close,
        KeyCode::Enter => Action::RefreshSearch,
        KeyCode::Up | KeyCode::Char('k') => Action::Scroll(Scroll::Up),
        KeyCode::Down | KeyCode::Char('j') => Action::Scroll(Scroll::Down),
        KeyCode::PageUp => Action::Scroll(Scroll::PageUp),
        KeyCode::PageDown => Action::Scroll(Scroll::PageDown),
        KeyCode::Home => Action::Scroll(Scroll::Home),
        KeyCode::End => Action::Scroll(Scroll::End),
        _ => return None,
    })
}

/// Pause and resume mean nothing once the crawl is stopping.
fn toggle_pause(app: &App) -> Option<Action> {
    match app.run_state() {
        RunState::Running => Some(Action::Pause),
        RunState::Paused => Some(Action::Resume),
        RunState::Stopping | RunState::Finished => None,
    }
}

/// The next step above `delay`; `None` at or above the last step.
pub fn delay_up(delay: Duration) -> Option<Duration> {
    let ms = delay.as_millis();
    DELAY_STEPS_MS
        .iter()
        .find(|&&step| u128::from(step) > ms)
        .map(|&step| Duration::from_millis(step))
}

/// The next step below `delay`; `None` at zero.
pub fn delay_down(delay: Duration) -> Option<Duration> {
    let ms = delay.as_millis();
    DELAY_STEPS_MS
        .iter()
        .rev()
        .find(|&&step| u128::from(step) < ms)
        .map(|&step| Duration::from_millis(step))
}

/// One more below 8 workers, a quarter more from there; `None` at the maximum.
pub fn workers_up(workers: usize) -> Option<usize> {
    let next = if workers < FINE_WORKERS {
        workers + 1
    } else {
        workers + workers / 4
    };
    let next = next.clamp(MIN_WORKERS, MAX_WORKERS);
    (next > workers).then_some(next)
}

/// One fewer up to 8 workers, a quarter fewer above (but not below 8); `None` at the minimum.
pub fn workers_down(workers: usize) -> Option<usize> {
    let next = if workers <= FINE_WORKERS {
        workers.saturating_sub(1)
    } else {
        (workers - workers / 4).max(FINE_WORKERS)
    };
    let next = next.clamp(MIN_WORKERS, MAX_WORKERS);
    (next < workers).then_some(next)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::dashboard::app::Effect;
    use crate::snapshot::{Politeness, SiteRow, Snapshot, Workers};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> KeyEvent {
        key(KeyCode::Char(c))
    }

    fn ctrl_c() -> KeyEvent {
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)
    }

    fn snapshot(state: RunState, delay_ms: u64, workers: usize) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            state,
            politeness: Politeness {
                delay_ms,
                ..Politeness::default()
            },
            workers: Workers {
                total: workers,
                ..Workers::default()
            },
            sites: vec![SiteRow {
                origin: "http://127.0.0.1:18000".into(),
                ..SiteRow::default()
            }],
            ..Snapshot::default()
        })
    }

    fn app(state: RunState, delay_ms: u64, workers: usize) -> App {
        let mut app = App::new(delay_ms, workers);
        app.set_snapshot(snapshot(state, delay_ms, workers));
        app
    }

    fn running() -> App {
        app(RunState::Running, 100, 16)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn p_and_space_pause_a_running_crawl() {
        assert_eq!(action(&running(), ch('p')), Some(Action::Pause));
        assert_eq!(action(&running(), ch(' ')), Some(Action::Pause));
    }

    #[test]
    fn p_resumes_a_paused_crawl() {
        assert_eq!(
            action(&app(RunState::Paused, 100, 16), ch('p')),
            Some(Action::Resume)
        );
    }

    #[test]
    fn p_pressed_twice_resumes_before_the_engine_confirmed_the_pause() {
        let mut app = running();
        app.apply(Action::Pause);
        assert_eq!(action(&app, ch('p')), Some(Action::Resume));
    }

    #[test]
    fn p_does_nothing_while_stopping() {
        assert_eq!(action(&app(RunState::Stopping, 100, 16), ch('p')), None);
    }

    #[test]
    fn plus_and_equals_raise_the_delay_to_the_next_step() {
        assert_eq!(action(&running(), ch('+')), Some(Action::SetDelay(ms(250))));
        assert_eq!(action(&running(), ch('=')), Some(Action::SetDelay(ms(250))));
    }

    #[test]
    fn plus_with_shift_as_some_terminals_send_it_still_counts() {
        let shifted = KeyEvent::new(KeyCode::Char('+'), KeyModifiers::SHIFT);
        assert_eq!(action(&running(), shifted), Some(Action::SetDelay(ms(250))));
    }

    #[test]
    fn minus_lowers_the_delay_to_the_step_below() {
        assert_eq!(action(&running(), ch('-')), Some(Action::SetDelay(ms(50))));
    }

    #[test]
    fn delay_between_steps_moves_to_the_neighbouring_steps() {
        let app = app(RunState::Running, 300, 16);
        assert_eq!(action(&app, ch('+')), Some(Action::SetDelay(ms(500))));
        assert_eq!(action(&app, ch('-')), Some(Action::SetDelay(ms(250))));
    }

    #[test]
    fn delay_at_zero_stays_at_zero() {
        let app = app(RunState::Running, 0, 16);
        assert_eq!(action(&app, ch('-')), None);
        assert_eq!(action(&app, ch('+')), Some(Action::SetDelay(ms(50))));
    }

    #[test]
    fn delay_at_ten_seconds_stays_at_ten_seconds() {
        let app = app(RunState::Running, 10_000, 16);
        assert_eq!(action(&app, ch('+')), None);
        assert_eq!(action(&app, ch('-')), Some(Action::SetDelay(ms(5_000))));
    }

    #[test]
    fn delay_above_the_last_step_goes_down_to_it() {
        let app = app(RunState::Running, 60_000, 16);
        assert_eq!(action(&app, ch('+')), None);
        assert_eq!(action(&app, ch('-')), Some(Action::SetDelay(ms(10_000))));
    }

    #[test]
    fn delay_steps_start_from_the_pending_delay() {
        let mut app = running();
        app.apply(Action::SetDelay(ms(250)));
        assert_eq!(action(&app, ch('+')), Some(Action::SetDelay(ms(500))));
    }

    #[test]
    fn workers_change_by_one_below_eight() {
        let app = app(RunState::Running, 100, 4);
        assert_eq!(action(&app, ch(']')), Some(Action::SetWorkers(5)));
        assert_eq!(action(&app, ch('[')), Some(Action::SetWorkers(3)));
    }

    #[test]
    fn workers_change_by_a_quarter_from_eight() {
        let app = app(RunState::Running, 100, 64);
        assert_eq!(action(&app, ch(']')), Some(Action::SetWorkers(80)));
        assert_eq!(action(&app, ch('[')), Some(Action::SetWorkers(48)));
        assert_eq!(workers_up(8), Some(10));
        assert_eq!(workers_down(9), Some(8), "not below 8 in quarter steps");
        assert_eq!(workers_down(8), Some(7));
    }

    #[test]
    fn workers_stay_within_one_and_4096() {
        let one = app(RunState::Running, 100, 1);
        assert_eq!(action(&one, ch('[')), None);
        let max = app(RunState::Running, 100, 4096);
        assert_eq!(action(&max, ch(']')), None);
        assert_eq!(workers_up(4000), Some(4096));
        assert_eq!(workers_up(0), Some(1));
    }

    #[test]
    fn s_stops_gracefully_once() {
        assert_eq!(action(&running(), ch('s')), Some(Action::Stop));
        assert_eq!(action(&app(RunState::Stopping, 100, 16), ch('s')), None);
    }

    #[test]
    fn q_quits_and_is_not_repeated() {
        let mut app = running();
        assert_eq!(action(&app, ch('q')), Some(Action::Quit));
        assert_eq!(app.apply(Action::Quit), Effect::Quit);
        assert_eq!(action(&app, ch('q')), None);
    }

    #[test]
    fn first_ctrl_c_quits_second_quits_now() {
        let mut app = running();
        assert_eq!(action(&app, ctrl_c()), Some(Action::Quit));
        app.apply(Action::Quit);
        assert_eq!(action(&app, ctrl_c()), Some(Action::QuitNow));
    }

    #[test]
    fn after_s_ctrl_c_and_q_still_quit() {
        let mut app = running();
        assert_eq!(action(&app, ch('s')), Some(Action::Stop));
        app.apply(Action::Stop);
        assert_eq!(interrupt(&app), Action::Quit);
        assert_eq!(action(&app, ch('q')), Some(Action::Quit));
        app.apply(Action::Quit);
        assert_eq!(interrupt(&app), Action::QuitNow);
    }

    #[test]
    fn other_control_keys_do_nothing() {
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(action(&running(), ctrl_s), None);
        let alt_q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::ALT);
        assert_eq!(action(&running(), alt_q), None);
    }

    #[test]
    fn e_exports() {
        assert_eq!(action(&running(), ch('e')), Some(Action::Export));
    }

    #[test]
    fn tab_and_backtab_move_the_focus() {
        assert_eq!(
            action(&running(), key(KeyCode::Tab)),
            Some(Action::FocusNext)
        );
        let backtab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(action(&running(), backtab), Some(Action::FocusPrev));
    }

    #[test]
    fn arrows_pages_home_and_end_scroll() {
        let app = running();
        for (code, scroll) in [
            (KeyCode::Up, Scroll::Up),
            (KeyCode::Down, Scroll::Down),
            (KeyCode::PageUp, Scroll::PageUp),
            (KeyCode::PageDown, Scroll::PageDown),
            (KeyCode::Home, Scroll::Home),
            (KeyCode::End, Scroll::End),
        ] {
            assert_eq!(
                action(&app, key(code)),
                Some(Action::Scroll(scroll)),
                "{code:?}"
            );
        }
    }

    #[test]
    fn o_cycles_the_sort() {
        assert_eq!(action(&running(), ch('o')), Some(Action::CycleSort));
    }

    #[test]
    fn f_opens_the_filter_prompt_where_every_key_types() {
        let mut app = running();
        assert_eq!(action(&app, ch('f')), Some(Action::OpenFilter));
        app.apply(Action::OpenFilter);
        for c in ['q', 'p', 'o', 'f', '/', ':'] {
            assert_eq!(
                action(&app, ch(c)),
                Some(Action::FilterPrompt(Edit::Insert(c))),
                "{c}"
            );
        }
        assert_eq!(
            action(&app, key(KeyCode::Backspace)),
            Some(Action::FilterPrompt(Edit::Backspace))
        );
        assert_eq!(action(&app, key(KeyCode::Enter)), Some(Action::ApplyFilter));
        assert_eq!(action(&app, key(KeyCode::Esc)), Some(Action::ClearFilter));
        assert_eq!(action(&app, key(KeyCode::Up)), None, "no history");
        assert_eq!(action(&app, ctrl_c()), Some(Action::Quit));
    }

    #[test]
    fn enter_opens_the_site_detail_from_the_sites_pane_only() {
        let mut app = running();
        assert_eq!(action(&app, key(KeyCode::Enter)), Some(Action::OpenDetail));
        app.apply(Action::FocusNext);
        assert_eq!(action(&app, key(KeyCode::Enter)), None);
    }

    #[test]
    fn enter_without_sites_does_nothing() {
        let mut app = App::new(100, 4);
        app.set_snapshot(Arc::new(Snapshot::default()));
        assert_eq!(action(&app, key(KeyCode::Enter)), None);
    }

    #[test]
    fn question_mark_opens_help() {
        assert_eq!(action(&running(), ch('?')), Some(Action::Help));
    }

    #[test]
    fn esc_in_normal_mode_does_nothing() {
        assert_eq!(action(&running(), key(KeyCode::Esc)), None);
    }

    #[test]
    fn in_help_any_key_closes_it() {
        let mut app = running();
        app.apply(Action::Help);
        for k in [
            ch('q'),
            ch('p'),
            ch('s'),
            key(KeyCode::Esc),
            key(KeyCode::Down),
            ch('x'),
        ] {
            assert_eq!(action(&app, k), Some(Action::Close), "{k:?}");
        }
    }

    #[test]
    fn in_help_ctrl_c_still_quits() {
        let mut app = running();
        app.apply(Action::Help);
        assert_eq!(action(&app, ctrl_c()), Some(Action::Quit));
    }

    #[test]
    fn in_site_detail_esc_and_enter_close_it() {
        let mut app = running();
        app.apply(Action::OpenDetail);
        assert_eq!(app.mode(), Mode::SiteDetail(0));
        assert_eq!(action(&app, key(KeyCode::Esc)), Some(Action::Close));
        assert_eq!(action(&app, key(KeyCode::Enter)), Some(Action::Close));
    }

    #[test]
    fn in_site_detail_crawl_keys_work_and_table_keys_do_not() {
        let mut app = running();
        app.apply(Action::OpenDetail);
        assert_eq!(action(&app, ch('p')), Some(Action::Pause));
        assert_eq!(action(&app, ch('+')), Some(Action::SetDelay(ms(250))));
        assert_eq!(action(&app, ch('q')), Some(Action::Quit));
        assert_eq!(action(&app, ch('?')), Some(Action::Help));
        assert_eq!(action(&app, key(KeyCode::Down)), None);
        assert_eq!(action(&app, key(KeyCode::Tab)), None);
        assert_eq!(action(&app, ch('o')), None);
    }

    #[test]
    fn after_the_crawl_finished_any_key_exits() {
        let app = app(RunState::Finished, 100, 16);
        for k in [
            ch('p'),
            ch('x'),
            key(KeyCode::Esc),
            key(KeyCode::Down),
            ctrl_c(),
        ] {
            assert_eq!(action(&app, k), Some(Action::Exit), "{k:?}");
        }
    }

    #[test]
    fn after_the_crawl_finished_a_key_exits_even_from_help() {
        let mut app = running();
        app.apply(Action::Help);
        app.set_snapshot(snapshot(RunState::Finished, 100, 16));
        assert_eq!(action(&app, ch('x')), Some(Action::Exit));
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut release = ch('p');
        release.kind = KeyEventKind::Release;
        assert_eq!(action(&running(), release), None);
    }

    fn prompt_open() -> App {
        let mut app = running();
        app.apply(Action::OpenSearch);
        app
    }

    fn results_open(state: RunState) -> App {
        let mut app = app(state, 100, 16);
        app.apply(Action::OpenSearch);
        app.apply(Action::Prompt(Edit::Insert('x')));
        app.apply(Action::RunSearch);
        assert_eq!(app.mode(), Mode::Search);
        app
    }

    #[test]
    fn slash_opens_the_search_prompt_from_the_table_and_the_detail() {
        assert_eq!(action(&running(), ch('/')), Some(Action::OpenSearch));
        let mut app = running();
        app.apply(Action::OpenDetail);
        assert_eq!(action(&app, ch('/')), Some(Action::OpenSearch));
    }

    #[test]
    fn the_prompt_swallows_the_crawl_keys_as_letters() {
        let app = prompt_open();
        for c in [
            'q', 'p', '+', '-', ' ', 's', 'e', '?', '/', 'o', 'j', '"', 'é',
        ] {
            assert_eq!(
                action(&app, ch(c)),
                Some(Action::Prompt(Edit::Insert(c))),
                "{c:?}"
            );
        }
        let shifted = KeyEvent::new(KeyCode::Char('Q'), KeyModifiers::SHIFT);
        assert_eq!(
            action(&app, shifted),
            Some(Action::Prompt(Edit::Insert('Q')))
        );
    }

    #[test]
    fn the_prompt_takes_enter_esc_backspace_and_its_editing_keys() {
        let app = prompt_open();
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        for (k, want) in [
            (key(KeyCode::Enter), Action::RunSearch),
            (key(KeyCode::Esc), Action::ClosePrompt),
            (key(KeyCode::Backspace), Action::Prompt(Edit::Backspace)),
            (key(KeyCode::Up), Action::Prompt(Edit::Older)),
            (key(KeyCode::Down), Action::Prompt(Edit::Newer)),
            (ctrl('u'), Action::Prompt(Edit::Clear)),
            (ctrl('w'), Action::Prompt(Edit::DeleteWord)),
        ] {
            assert_eq!(action(&app, k), Some(want), "{k:?}");
        }
        for k in [key(KeyCode::Tab), key(KeyCode::F(5)), ctrl('s')] {
            assert_eq!(action(&app, k), None, "{k:?}");
        }
    }

    #[test]
    fn in_the_prompt_ctrl_c_still_quits() {
        assert_eq!(action(&prompt_open(), ctrl_c()), Some(Action::Quit));
    }

    #[test]
    fn the_results_pane_scrolls_refreshes_closes_and_lets_crawl_keys_through() {
        let app = results_open(RunState::Running);
        for (k, want) in [
            (key(KeyCode::Esc), Some(Action::Close)),
            (key(KeyCode::Enter), Some(Action::RefreshSearch)),
            (key(KeyCode::Down), Some(Action::Scroll(Scroll::Down))),
            (ch('k'), Some(Action::Scroll(Scroll::Up))),
            (
                key(KeyCode::PageDown),
                Some(Action::Scroll(Scroll::PageDown)),
            ),
            (ch('/'), Some(Action::OpenSearch)),
            (ch('p'), Some(Action::Pause)),
            (ch('+'), Some(Action::SetDelay(ms(250)))),
            (ch('q'), Some(Action::Quit)),
            (key(KeyCode::Tab), None),
            (ch('o'), None),
        ] {
            assert_eq!(action(&app, k), want, "{k:?}");
        }
    }

    #[test]
    fn after_the_crawl_finished_slash_searches_and_other_keys_exit() {
        let app = app(RunState::Finished, 100, 16);
        assert_eq!(action(&app, ch('/')), Some(Action::OpenSearch));
        let mut typing = app.clone();
        typing.apply(Action::OpenSearch);
        assert_eq!(
            action(&typing, ch('q')),
            Some(Action::Prompt(Edit::Insert('q')))
        );
        let results = results_open(RunState::Finished);
        assert_eq!(action(&results, key(KeyCode::Esc)), Some(Action::Close));
        assert_eq!(
            action(&results, key(KeyCode::Down)),
            Some(Action::Scroll(Scroll::Down))
        );
        assert_eq!(action(&results, ch('q')), Some(Action::Exit));
        assert_eq!(action(&results, ctrl_c()), Some(Action::Exit));
    }

    #[test]
    fn unknown_keys_do_nothing() {
        assert_eq!(action(&running(), ch('x')), None);
        assert_eq!(action(&running(), key(KeyCode::F(5))), None);
    }
}
