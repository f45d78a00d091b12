//! A class records its statistics by itself ([`ksync::ClassData::set_recording`]) while
//! they are off for the others, and every class records once they are on for all
//! ([`ksync::stat::set_enabled`]). Its own binary's test: the unit tests beside the code
//! switch statistics on for every class, which would hide what this checks.

use ksync::{LockClass, SpinMutex};

ksync::lock_class!(
    /// The class switched on by itself.
    Chosen, "test.recording.chosen"
);
ksync::lock_class!(
    /// A class nobody switched on.
    Other, "test.recording.other"
);
ksync::word_class!(
    /// A shared word switched on by itself.
    ChosenWord, "test.recording.word"
);
ksync::lock_class!(
    /// A class first taken while statistics are on for every class.
    Late, "test.recording.late"
);

fn take_both(chosen: &SpinMutex<Chosen, ()>, other: &SpinMutex<Other, ()>) {
    drop(chosen.lock());
    drop(other.lock());
}

#[test]
fn a_class_records_by_itself_and_all_record_when_enabled() {
    let (chosen, other) = (
        SpinMutex::<Chosen, ()>::new(()),
        SpinMutex::<Other, ()>::new(()),
    );
    let acquisitions = |d: &ksync::ClassData| d.snapshot().acquisitions;
    assert!(!ksync::stat::enabled());
    assert!(
        !ksync::classes().any(|c| c.name() == Chosen::NAME),
        "not listed before it is used"
    );
    Chosen::data().set_recording(true);
    assert!(
        ksync::classes().any(|c| c.name() == Chosen::NAME),
        "switching a class on registers it"
    );
    take_both(&chosen, &other);
    take_both(&chosen, &other);
    assert_eq!(
        (acquisitions(Chosen::data()), acquisitions(Other::data())),
        (2, 0)
    );
    assert!(ksync::handoff::note_write::<ChosenWord>(0x40, 0, 1).is_none());
    ChosenWord::data().set_recording(true);
    assert!(ksync::handoff::note_write::<ChosenWord>(0x40, 0, 1).is_some());
    assert_eq!(acquisitions(ChosenWord::data()), 1);

    Chosen::data().set_recording(false);
    take_both(&chosen, &other);
    assert_eq!(
        (acquisitions(Chosen::data()), acquisitions(Other::data())),
        (2, 0)
    );

    ksync::stat::set_enabled(true);
    take_both(&chosen, &other);
    let late = SpinMutex::<Late, ()>::new(());
    drop(late.lock());
    ksync::stat::set_enabled(false);
    assert_eq!(
        (acquisitions(Chosen::data()), acquisitions(Other::data())),
        (3, 1),
        "a class asked before the switch was written follows it"
    );
    assert_eq!(
        acquisitions(Late::data()),
        1,
        "a class first asked while it is on"
    );
    take_both(&chosen, &other);
    drop(late.lock());
    assert_eq!(
        (
            acquisitions(Chosen::data()),
            acquisitions(Other::data()),
            acquisitions(Late::data())
        ),
        (3, 1, 1),
        "every class stops with the switch"
    );
}
