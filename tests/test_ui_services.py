"""The page's services read and save settings in the data folder they were made for."""

from __future__ import annotations

from pathlib import Path

from facefusion_ui.config import read_config, save_config
from facefusion_ui.state_manager import Settings
from facefusion_ui.ui.services import UiServices


def test_settings_are_read_from_and_saved_to_the_given_home(tmp_path: Path, private_home: Path) -> None:
    home = tmp_path / "other-home"
    home.mkdir()
    save_config(Settings(output_video_quality=55), home / "settings.json")
    services = UiServices.create(home=home, start_worker=False)
    try:
        assert services.settings().output_video_quality == 55  # not the default home's (none there)
        services.save_settings({"output_video_quality": 60})
        assert read_config(home / "settings.json")["output_video_quality"] == 60
        assert not (private_home / "settings.json").exists()
    finally:
        services.stop()
